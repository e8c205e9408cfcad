//! `script`: copy a script of the role into the rootfs's `/tmp` and run it there.

use std::path::Path;

use planner::modules::script::ScriptParams;
use serde_json::Value as Json;

use super::command::{command_result, creates_removes, split_words};
use super::{params, ModuleCtx, ModuleError, ModuleResult};
use crate::target::Cmd;

/// `script`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: ScriptParams = params("script", args)?;
    if let Some(skip) = creates_removes(ctx, &p.creates, &p.removes, None)? {
        return Ok(skip);
    }
    if ctx.check {
        return Ok(ModuleResult {
            skipped: true,
            msg: Some("scripts do not run in check mode".into()),
            ..ModuleResult::default()
        });
    }
    let words = split_words(p.cmd.as_str())?;
    let inside = format!("/tmp/.imgbuild-script-{}", std::process::id());
    ctx.target
        .fs()
        .copy_in(&ctx.local_path()?, Path::new(&inside), Some(0o700))?;
    let mut argv: Vec<String> = p.executable.iter().map(|e| e.to_string()).collect();
    argv.push(inside.clone());
    argv.extend(words.into_iter().skip(1));
    let cmd = Cmd {
        argv,
        env: ctx.env.to_vec(),
        cwd: p.chdir.as_ref().map(|c| c.to_string()),
        stdin: None,
        user: None,
    };
    let out = ctx.target.run(&cmd);
    ctx.target.fs().remove_all(Path::new(&inside))?;
    command_result(serde_json::Value::from(p.cmd.as_str()), out?, true)
}
