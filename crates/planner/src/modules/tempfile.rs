//! `tempfile`: a new temporary file or folder in the image's `/tmp` (the role's scratch space,
//! not part of the layer), registered as `path`.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Text};

crate::choices!(
    /// File or folder.
    TempKind { File => "file", Directory => "directory" }
);

/// Parameters of `tempfile`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TempfileParams {
    /// File or folder (default file).
    pub state: Option<Choice<TempKind>>,
    /// Where (default `/tmp`).
    pub path: Option<Text>,
    /// Name prefix (default `ansible.`).
    pub prefix: Option<Text>,
    /// Name suffix.
    pub suffix: Option<Text>,
}

impl Params for TempfileParams {}

/// `tempfile`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "tempfile",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<TempfileParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};
