//! `patch`: a role's patch file applied with the image's `patch`.

use planner::modules::patch::PatchParams;
use serde_json::Value as Json;

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use crate::target::Cmd;

/// `patch`: applied unless it already is (a reverse dry run succeeds).
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: PatchParams = params(planner::modules::patch::SPEC.name, args)?;
    let text = std::fs::read_to_string(ctx.local_path()?)
        .map_err(|e| ModuleError::new(format!("reading the patch {}: {e}", p.src.as_str())))?;
    let strip = p
        .strip
        .as_ref()
        .map_or("0", |s| s.as_str())
        .trim()
        .to_owned();
    let mut argv: Vec<String> = vec!["patch".into(), "--batch".into(), format!("-p{strip}")];
    if flag(&p.ignore_whitespace, false) {
        argv.push("--ignore-whitespace".into());
    }
    let cwd = p.basedir.as_ref().map(|b| b.as_str().to_owned());
    if let Some(dest) = &p.dest {
        argv.push(dest.as_str().to_owned());
    }
    let run = |extra: &[&str]| {
        let mut words = argv.clone();
        words.splice(1..1, extra.iter().map(|s| (*s).to_owned()));
        let mut cmd = Cmd::new(&words);
        cmd.stdin = Some(text.clone());
        cmd.cwd = cwd.clone();
        ctx.target.run(&cmd)
    };
    let applied = run(&["--reverse", "--dry-run", "--silent"])?;
    if applied.rc == 0 {
        return Ok(ModuleResult::changed(false));
    }
    let check = run(&["--forward", "--dry-run"])?;
    if check.rc != 0 {
        return Err(ModuleError::new(format!(
            "the patch {} does not apply: {}",
            p.src.as_str(),
            check.stdout.trim()
        )));
    }
    if !ctx.check {
        let out = run(&["--forward"])?;
        if out.rc != 0 {
            return Err(ModuleError::new(format!(
                "patch failed: {}",
                out.stdout.trim()
            )));
        }
    }
    Ok(ModuleResult::changed(true))
}
