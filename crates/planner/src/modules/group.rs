//! `group`: groups in the rootfs's group file.

use serde::{Deserialize, Serialize};

use super::lineinfile::LineState;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Int, Text};

/// Parameters of `group`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupParams {
    /// Group name.
    pub name: Text,
    /// Present or absent.
    pub state: Option<Choice<LineState>>,
    /// Group id.
    pub gid: Option<Int>,
    /// A system group.
    pub system: Option<Flag>,
    /// Allow a non-unique gid.
    pub non_unique: Option<Flag>,
    /// Use local files only.
    pub local: Option<Flag>,
    /// Remove even when it is a user's primary group.
    pub force: Option<Flag>,
    /// Lowest gid to pick from.
    pub gid_min: Option<Int>,
    /// Highest gid to pick from.
    pub gid_max: Option<Int>,
}

impl Params for GroupParams {}

/// `group`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "group",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<GroupParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
