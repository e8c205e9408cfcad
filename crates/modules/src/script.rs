//! `script`: copy a script from the role's `files/` into the rootfs and run it there.
//!
//! Copy a script of the role into the rootfs's `/tmp` and run it there.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::command::command_result;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::Text;
use crate::target::Cmd;
use serde_json::Value as Json;
use std::path::Path;

/// Parameters of `script`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptParams {
    /// The script path (relative to the role's `files/`) and its arguments.
    #[serde(alias = "_raw_params")]
    pub cmd: Text,
    /// Directory to run in.
    pub chdir: Option<Text>,
    /// Skip when this path exists.
    pub creates: Option<Text>,
    /// Skip unless this path exists.
    pub removes: Option<Text>,
    /// Interpreter to run the script with.
    pub executable: Option<Text>,
}

impl Params for ScriptParams {}

/// `script`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "script",
    aliases: &[],
    free_form: FreeForm::Command(&["chdir", "creates", "removes", "executable"]),
    url_params: &[],
    normalize: super::spec::normalize_with::<ScriptParams>,
    plan_time: PlanTime::PushScript,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `script`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: ScriptParams = params(SPEC.name, args)?;
    let fs = ctx.target.fs();
    let skip = |msg: String| ModuleResult {
        skipped: true,
        msg: Some(msg),
        ..ModuleResult::default()
    };
    if let Some(creates) = p.creates.as_ref().filter(|c| !c.as_str().is_empty()) {
        if fs.exists(Path::new(creates.as_str()))? {
            return Ok(skip(format!("{creates} exists, matching creates option")));
        }
    }
    if let Some(removes) = p.removes.as_ref().filter(|r| !r.as_str().is_empty()) {
        if !fs.exists(Path::new(removes.as_str()))? {
            return Ok(skip(format!(
                "{removes} does not exist, matching removes option"
            )));
        }
    }
    if let Some(chdir) = p.chdir.as_ref().filter(|c| !c.as_str().starts_with('/')) {
        return Err(ModuleError::new(format!(
            "chdir {chdir} must be an absolute path for a Unix-aware remote node"
        )));
    }
    if ctx.check {
        // With creates or removes the action reports the change it would make; without, it
        // cannot tell and skips.
        if p.creates.is_some() || p.removes.is_some() {
            return Ok(ModuleResult::changed(true));
        }
        return Ok(skip("Check mode is not supported for this task.".into()));
    }
    let (folder, line) = command_line(p.cmd.as_str(), p.executable.as_ref().map(|e| e.as_str()))?;
    let script = ctx.local_path()?;
    let name = script
        .file_name()
        .map_or_else(|| "script".into(), |n| n.to_string_lossy().into_owned());
    let inside = format!("{folder}/{name}");
    ctx.target.fs().mkdir_all(Path::new(&folder), 0o700)?;
    ctx.target
        .fs()
        .copy_in(&script, Path::new(&inside), Some(0o700))?;
    let cmd = Cmd {
        argv: vec!["/bin/sh".into(), "-c".into(), line.replace(SCRIPT, &inside)],
        env: ctx.env.to_vec(),
        cwd: p.chdir.as_ref().map(|c| c.to_string()),
        stdin: None,
        user: None,
    };
    let out = ctx.target.run(&cmd);
    ctx.target.fs().remove_all(Path::new(&folder))?;
    command_result(serde_json::Value::from(p.cmd.as_str()), out?, true)
}

/// Where the script's path goes in its command line until the path inside is known.
const SCRIPT: &str = "\u{0}script\u{0}";

/// The folder the script is copied to, and the shell line that runs it: as Ansible's script
/// action, the line as written with its first word (`shlex.split`'s, so a quoted path may hold
/// spaces) replaced by the script's path inside, after `executable` when given.
fn command_line(raw: &str, executable: Option<&str>) -> Result<(String, String), ModuleError> {
    let raw = raw.trim();
    let words = ansible::shlex::split(raw).map_err(|e| ModuleError::new(e.to_string()))?;
    let first = words
        .first()
        .filter(|w| !w.is_empty())
        .ok_or_else(|| ModuleError::new("script: no script named"))?;
    let line = raw.replace(first.as_str(), SCRIPT);
    let line = match executable.filter(|e| !e.is_empty()) {
        Some(executable) => format!("{executable} {line}"),
        None => line,
    };
    Ok((
        format!("/tmp/.imgbuild-script-{}", std::process::id()),
        line,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quoted_script_path_is_replaced_and_the_quotes_stay() {
        let (_, line) = command_line(" 'space path/test.sh' \"a b\" ", None).expect("line");
        assert_eq!(line, format!("'{SCRIPT}' \"a b\""));
        let (_, line) = command_line("x.py 1", Some("python3")).expect("line");
        assert_eq!(line, format!("python3 {SCRIPT} 1"));
    }
}
