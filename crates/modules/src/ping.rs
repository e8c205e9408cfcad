//! `ping`: answers `pong` (or `data`), as Ansible's module does to show the host runs modules.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::Text;

/// Parameters of `ping`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PingParams {
    /// What to answer (`crash` makes the module fail, as Ansible's does).
    pub data: Option<Text>,
}

impl Params for PingParams {}

/// `ping`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "ping",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<PingParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
