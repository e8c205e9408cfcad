//! `fail`: stop the build with a message.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};

/// Parameters of `fail`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FailParams {
    /// The message.
    pub msg: Option<serde_json::Value>,
}

impl Params for FailParams {}

/// `fail`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "fail",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<FailParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
