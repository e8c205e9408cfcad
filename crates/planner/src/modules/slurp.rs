//! `slurp`: a file of the image, registered as base64 `content`.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::Text;

/// Parameters of `slurp`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SlurpParams {
    /// The file.
    #[serde(alias = "path")]
    pub src: Text,
}

impl Params for SlurpParams {}

/// `slurp`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "slurp",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<SlurpParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};
