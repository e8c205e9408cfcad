//! `shell`: run a command through `/bin/sh` in the rootfs.
//!
//! A command line run by the image's shell (`/bin/sh -c`, or `executable`); what it
//! shares with `command` is in `command.rs`.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::command::{command_result, creates_removes, enter_chdir, not_in_check_mode, run_cmd};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Text};
use serde_json::Value as Json;

/// Parameters of `shell`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ShellParams {
    /// The command line.
    #[serde(alias = "_raw_params")]
    pub cmd: Text,
    /// Directory to run in.
    pub chdir: Option<Text>,
    /// Skip when this path exists.
    pub creates: Option<Text>,
    /// Skip unless this path exists.
    pub removes: Option<Text>,
    /// Shell to use instead of `/bin/sh`.
    pub executable: Option<Text>,
    /// Standard input.
    pub stdin: Option<Text>,
    /// Append a newline to `stdin`.
    pub stdin_add_newline: Option<Flag>,
    /// Strip empty trailing lines of output.
    pub strip_empty_ends: Option<Flag>,
}

impl Params for ShellParams {}

/// `shell`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "shell",
    aliases: &[],
    free_form: FreeForm::Command(super::command::FREE_FORM_KEYS),
    url_params: &[],
    normalize: super::spec::normalize_with::<ShellParams>,
    plan_time: PlanTime::RunsCommand,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `shell`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: ShellParams = params(SPEC.name, args)?;
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
