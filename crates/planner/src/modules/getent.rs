//! `getent`: entries of the image's name-service databases (`passwd`, `group`, `hosts`, ...),
//! returned as the fact `getent_<database>`.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Text};

/// Parameters of `getent`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GetentParams {
    /// The database (`passwd`, `group`, `shadow`, `hosts`, ...).
    pub database: Text,
    /// One key of it; every entry without one.
    pub key: Option<Text>,
    /// The NSS service to ask (`-s`).
    pub service: Option<Text>,
    /// What separates an entry's fields (`:` for passwd, shadow, group and gshadow, else
    /// whitespace).
    pub split: Option<Text>,
    /// Fail when the key is not there (default yes).
    pub fail_key: Option<Flag>,
}

impl Params for GetentParams {}

/// `getent`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "getent",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<GetentParams>,
    plan_time: PlanTime::GetentFacts,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
