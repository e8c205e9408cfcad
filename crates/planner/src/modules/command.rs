//! `command`: run a program in the rootfs without a shell.

use serde::{Deserialize, Serialize};

use super::types::{Flag, Text};
use super::{exactly_one, FreeForm, ModuleSpec, Params, Runs};

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
}

impl Params for CommandParams {
    fn check(&self) -> Result<(), String> {
        exactly_one(
            "command",
            &[("cmd", self.cmd.is_some()), ("argv", self.argv.is_some())],
        )
    }
}

/// `command`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "command",
    aliases: &[],
    free_form: FreeForm::Command(super::shell::FREE_FORM_KEYS),
    runs: Runs::Target,
    url_params: &[],
    normalize: super::normalize_with::<CommandParams>,
};
