//! `shell`: run a command through `/bin/sh` in the rootfs.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Text};

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

/// The words taken out of a free-form command.
pub const FREE_FORM_KEYS: &[&str] = &[
    "chdir",
    "creates",
    "removes",
    "executable",
    "stdin",
    "stdin_add_newline",
    "strip_empty_ends",
];

/// `shell`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "shell",
    aliases: &[],
    free_form: FreeForm::Command(FREE_FORM_KEYS),
    url_params: &[],
    normalize: super::spec::normalize_with::<ShellParams>,
    plan_time: PlanTime::RunsCommand,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
