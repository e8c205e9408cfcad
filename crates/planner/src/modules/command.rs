//! `command`: run a program in the rootfs without a shell.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Text};

/// Parameters of `command`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CommandParams {
    /// The command line, split into words like a shell would (no expansion).
    #[serde(alias = "_raw_params")]
    pub cmd: Option<Text>,
    /// The program and its arguments.
    pub argv: Option<Vec<Text>>,
    /// Directory to run in.
    pub chdir: Option<Text>,
    /// Skip when this path exists.
    pub creates: Option<Text>,
    /// Skip unless this path exists.
    pub removes: Option<Text>,
    /// Standard input.
    pub stdin: Option<Text>,
    /// Append a newline to `stdin`.
    pub stdin_add_newline: Option<Flag>,
    /// Strip empty trailing lines of output.
    pub strip_empty_ends: Option<Flag>,
    /// Expand `$VARS` in arguments.
    pub expand_argument_vars: Option<Flag>,
    /// Taken and ignored with a warning, as ansible-core 2.14's command module does.
    pub executable: Option<Text>,
}

/// Neither or both of `cmd` and `argv` fail when the module runs, as Ansible's (rc 256).
impl Params for CommandParams {}

/// `command`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "command",
    aliases: &[],
    free_form: FreeForm::Command(super::shell::FREE_FORM_KEYS),
    url_params: &[],
    normalize: super::spec::normalize_with::<CommandParams>,
    plan_time: PlanTime::RunsCommand,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
