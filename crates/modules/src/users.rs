//! What `user` and `group` share: the rootfs's account files read, and its own
//! useradd/groupadd/usermod run.

use std::path::Path;

use crate::lineinfile::LineState;
use crate::types::{Choice, Int};

use super::api::{ModuleCtx, ModuleError};
use crate::target::Cmd;

/// One line of `/etc/passwd` or `/etc/group`, split on `:`.
pub(super) fn entry(
    ctx: &ModuleCtx,
    file: &str,
    name: &str,
) -> Result<Option<Vec<String>>, ModuleError> {
    let text = ctx
        .target
        .fs()
        .read_text_opt(Path::new(file))?
        .unwrap_or_default();
    Ok(text
        .lines()
        .map(|l| l.split(':').map(str::to_owned).collect::<Vec<_>>())
        .find(|f| f.first().map(String::as_str) == Some(name)))
}

pub(super) fn groups_of(ctx: &ModuleCtx, user: &str) -> Result<Vec<String>, ModuleError> {
    let text = ctx
        .target
        .fs()
        .read_text_opt(Path::new("/etc/group"))?
        .unwrap_or_default();
    Ok(text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() >= 4 && f[3].split(',').any(|m| m == user)).then(|| f[0].to_owned())
        })
        .collect())
}

pub(super) fn run_argv(ctx: &ModuleCtx, argv: Vec<String>) -> Result<(), ModuleError> {
    let shown = argv.join(" ");
    let out = ctx.target.run(&Cmd {
        argv,
        env: ctx.env.to_vec(),
        cwd: None,
        stdin: None,
        user: None,
    })?;
    if out.rc != 0 {
        return Err(ModuleError::new(format!(
            "{shown} failed (exit {}): {}",
            out.rc,
            out.stderr.trim()
        )));
    }
    Ok(())
}

pub(super) fn int(value: &Option<Int>) -> Result<Option<i64>, ModuleError> {
    match value {
        None => Ok(None),
        Some(Int::Known(n)) => Ok(Some(*n)),
        Some(Int::Deferred(t)) => Err(ModuleError::new(format!("'{t}' was not resolved"))),
    }
}

pub(super) fn absent(state: &Option<Choice<LineState>>) -> bool {
    matches!(state, Some(Choice::Known(LineState::Absent)))
}
