//! `script`: copy a script from the role's `files/` into the rootfs and run it there.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::Text;

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
