//! The package managers' commands as the modules run them (`apt`, `dnf`, the build-only
//! cleanup): how one runs in the target, and what its failure reports.

use serde_json::json;

use super::api::{ModuleCtx, ModuleError};
use crate::target::{Cmd, CmdOutput};

/// Runs a package manager's command in the target, with the task's environment and `env` on
/// top of it. (apt puts the initramfs shims in dpkg's `PATH` itself, through `DPkg::Path`:
/// crate::initramfs.)
pub(super) fn run(
    ctx: &ModuleCtx,
    argv: Vec<String>,
    env: &[(&str, &str)],
) -> Result<CmdOutput, ModuleError> {
    let mut cmd = Cmd {
        argv,
        env: ctx.env.to_vec(),
        cwd: None,
        stdin: None,
        user: None,
    };
    for (k, v) in env {
        cmd.env.push(((*k).to_owned(), (*v).to_owned()));
    }
    Ok(ctx.target.run(&cmd)?)
}

/// The error of a failed package manager command: its last lines, with `rc`, `stdout` and
/// `stderr` registered.
pub(super) fn failed(what: &str, out: &CmdOutput) -> ModuleError {
    // A name apt does not know: Ansible's apt says so before it runs apt-get (no output).
    if let Some(name) = out
        .stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("E: Unable to locate package "))
    {
        return ModuleError::new(format!("No package matching '{name}' is available"));
    }
    let tail: Vec<&str> = out
        .stderr
        .lines()
        .chain(out.stdout.lines())
        .filter(|l| !l.trim().is_empty())
        .collect();
    let tail = tail[tail.len().saturating_sub(12)..].join("\n");
    let mut error = ModuleError::new(format!("{what} failed (exit {}):\n{tail}", out.rc));
    error.fields.insert("rc".into(), json!(out.rc));
    error.fields.insert("stdout".into(), json!(out.stdout));
    error.fields.insert("stderr".into(), json!(out.stderr));
    error
}

/// The environment apt and dpkg run with: never a question, never a pager.
pub(super) const APT_ENV: &[(&str, &str)] = &[
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("APT_LISTCHANGES_FRONTEND", "none"),
];
