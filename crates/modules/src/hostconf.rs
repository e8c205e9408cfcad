//! What the host-settings modules share (`sysctl`, `modprobe`, `kernel_blacklist`, `timezone`,
//! `mount`, each in its own file): an image carries a host setting as files the node reads at
//! boot. None of them touches the build host: a setting is never applied and a module is never
//! loaded (the result says so).

use std::path::Path;

use crate::types::Text;

use super::api::{ModuleCtx, ModuleError, ModuleResult};
use super::attrs::FileAttrs;
use super::copy::{place, Placement};
use super::lineinfile::{read_lines, write_lines};

/// Sets the line `matches` finds to `line` (appending it when none does), or removes every
/// matching line when `line` is `None`. Creates the file (and nothing else) when missing.
pub fn set_line(
    ctx: &ModuleCtx,
    path: &Path,
    matches: impl Fn(&str) -> bool,
    line: Option<&str>,
) -> Result<ModuleResult, ModuleError> {
    let (mut lines, before) = read_lines(ctx, path)?.unwrap_or_default();
    match line {
        Some(line) => match lines.iter().position(|l| matches(l)) {
            Some(i) => {
                lines[i] = line.to_owned();
                let mut i = i + 1;
                while i < lines.len() {
                    if matches(&lines[i]) {
                        lines.remove(i);
                    } else {
                        i += 1;
                    }
                }
            }
            None => lines.push(line.to_owned()),
        },
        None => lines.retain(|l| !matches(l)),
    }
    if line.is_none() && before.is_empty() && lines.is_empty() {
        return Ok(ModuleResult::changed(false));
    }
    write_lines(ctx, path, &before, &lines, &FileAttrs::NONE)
}

pub(super) fn text(t: &Text) -> &str {
    t.as_str()
}

/// The first word of a config line, ignoring comments.
pub(super) fn words(line: &str) -> Vec<&str> {
    let line = line.split('#').next().unwrap_or("");
    line.split_whitespace().collect()
}

pub(super) fn ensure_parent(ctx: &ModuleCtx, path: &Path) -> Result<(), ModuleError> {
    if let Some(parent) = path.parent() {
        if !ctx.check {
            ctx.target.fs().mkdir_all(parent, 0o755)?;
        }
    }
    Ok(())
}

/// Writes `content` to `path` (or removes it when `None`), reporting the change.
pub(super) fn whole_file(
    ctx: &ModuleCtx,
    path: &Path,
    content: Option<&str>,
) -> Result<bool, ModuleError> {
    match content {
        Some(content) => {
            ensure_parent(ctx, path)?;
            let how = Placement {
                bytes: content.as_bytes(),
                mode: &None,
                owner: &None,
                group: &None,
                force: true,
                validate: None,
                backup: false,
            };
            Ok(place(ctx, path, &how)?.changed)
        }
        None => {
            let fs = ctx.target.fs();
            let there = fs.exists(path)?;
            if there && !ctx.check {
                fs.remove_all(path)?;
            }
            Ok(there)
        }
    }
}
