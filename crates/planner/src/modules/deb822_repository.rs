//! `deb822_repository`: a `.sources` file (deb822 form) in the image's
//! `/etc/apt/sources.list.d/`.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, PackageFamily, Params, PlanTime};
use super::types::{Choice, Flag, Mode, Text, TextList};

crate::choices!(
    /// There or not.
    Deb822State { Present => "present", Absent => "absent" }
);

/// Parameters of `deb822_repository`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Deb822RepositoryParams {
    /// The file name without `.sources`.
    pub name: Text,
    /// `deb`, `deb-src`.
    pub types: Option<TextList>,
    /// Archive URLs.
    pub uris: Option<TextList>,
    /// Suites.
    pub suites: Option<TextList>,
    /// Components.
    pub components: Option<TextList>,
    /// The key file (`Signed-By`).
    pub signed_by: Option<Text>,
    /// Architectures.
    pub architectures: Option<TextList>,
    /// Enabled.
    pub enabled: Option<Flag>,
    /// Trusted.
    pub trusted: Option<Flag>,
    /// Present or absent.
    pub state: Option<Choice<Deb822State>>,
    /// Mode.
    pub mode: Option<Mode>,
}

impl Params for Deb822RepositoryParams {
    fn check(&self) -> Result<(), String> {
        let absent = matches!(self.state, Some(Choice::Known(Deb822State::Absent)));
        if !absent && (self.uris.is_none() || self.suites.is_none()) {
            return Err("deb822_repository needs uris and suites".into());
        }
        Ok(())
    }
}

/// `deb822_repository`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "deb822_repository",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["uris"],
    normalize: super::spec::normalize_with::<Deb822RepositoryParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: Some(PackageFamily::Apt),
    controller_folder: false,
    build_expressions: &[],
};
