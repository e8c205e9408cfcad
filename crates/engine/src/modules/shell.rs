//! `shell`: a command line run by the image's shell (`/bin/sh -c`, or `executable`); what it
//! shares with `command` is in `command.rs`.

use planner::modules::shell::ShellParams;
use serde_json::Value as Json;

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::command::{creates_removes, command_result, run_cmd, enter_chdir, not_in_check_mode};

/// `shell`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: ShellParams = params(planner::modules::shell::SPEC.name, args)?;
    let shown = Json::from(p.cmd.as_str());
    enter_chdir(ctx, &p.chdir)?;
    if let Some(skip) = creates_removes(ctx, &p.creates, &p.removes, Some(shown.clone()))? {
        return Ok(skip);
    }
    if ctx.check {
        return Ok(not_in_check_mode(&p.creates, &p.removes, shown));
    }
    let shell = p
        .executable
        .as_ref()
        .map(|e| e.to_string())
        .unwrap_or_else(|| "/bin/sh".into());
    let argv = vec![shell, "-c".into(), p.cmd.to_string()];
    let out = run_cmd(
        ctx,
        argv,
        &p.chdir,
        &p.stdin,
        flag(&p.stdin_add_newline, true),
    )?;
    command_result(
        Json::from(p.cmd.as_str()),
        out,
        flag(&p.strip_empty_ends, true),
    )
}
