//! `package`: install or remove packages with the rootfs's package manager.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Text, TextList};

crate::choices!(
    /// What `package` does with the names.
    PackageState { Present => "present" | "installed", Latest => "latest", Absent => "absent" | "removed" }
);

/// Parameters of `package`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PackageParams {
    /// Package names (`pkg`: Ansible passes it on to apt, dnf and yum, which take it).
    #[serde(alias = "pkg")]
    pub name: TextList,
    /// Present, latest or absent.
    pub state: Option<Choice<PackageState>>,
    /// Force a package manager (`apt`, `dnf`).
    #[serde(rename = "use")]
    pub use_: Option<Text>,
}

impl Params for PackageParams {}

/// `package`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "package",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["name"],
    normalize: super::spec::normalize_with::<PackageParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::PackageNames,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
