//! `debug`: print a message or a variable.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Int, Text};

/// Parameters of `debug`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DebugParams {
    /// The message (any value).
    pub msg: Option<serde_json::Value>,
    /// A variable name to print.
    pub var: Option<Text>,
    /// Minimum verbosity to print at.
    pub verbosity: Option<Int>,
}

impl Params for DebugParams {
    fn check(&self) -> Result<(), String> {
        if self.msg.is_some() && self.var.is_some() {
            return Err("use msg or var, not both".into());
        }
        Ok(())
    }
}

/// `debug`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "debug",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<DebugParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &["var"],
};
