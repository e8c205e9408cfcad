//! `apt_repository`: a one-line source in the image's `/etc/apt/sources.list.d/`.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, PackageFamily, Params, PlanTime};
use super::types::{Choice, Flag, Mode, Text};

crate::choices!(
    /// There or not.
    AptRepoState { Present => "present", Absent => "absent" }
);

/// Parameters of `apt_repository`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AptRepositoryParams {
    /// The source line (`deb [signed-by=...] http://mirror/ubuntu jammy main`).
    pub repo: Text,
    /// The file name without `.list` (default: made from the line).
    pub filename: Option<Text>,
    /// Present or absent.
    pub state: Option<Choice<AptRepoState>>,
    /// Run `apt-get update` after a change (default true).
    #[serde(alias = "update-cache")]
    pub update_cache: Option<Flag>,
    /// Mode.
    pub mode: Option<Mode>,
    /// Accepted.
    pub codename: Option<Text>,
    /// Accepted.
    pub validate_certs: Option<Flag>,
    /// Accepted.
    pub install_python_apt: Option<Flag>,
}

impl Params for AptRepositoryParams {}

/// `apt_repository`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "apt_repository",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<AptRepositoryParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: Some(PackageFamily::Apt),
    controller_folder: false,
    build_expressions: &[],
};
