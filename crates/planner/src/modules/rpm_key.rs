//! `rpm_key`: a signing key imported into the image's rpm database (`rpm --import` in the
//! rootfs; a URL is downloaded through the site mirror and pinned like any artifact).

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, PackageFamily, Params, PlanTime};
use super::types::{Choice, Flag, Text};

crate::choices!(
    /// Imported or removed.
    KeyState { Present => "present", Absent => "absent" }
);

/// Parameters of `rpm_key`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RpmKeyParams {
    /// A URL, or a path in the image.
    pub key: Text,
    /// Present or absent.
    pub state: Option<Choice<KeyState>>,
    /// The fingerprint the key must have.
    pub fingerprint: Option<Text>,
    /// Accepted.
    pub validate_certs: Option<Flag>,
}

impl Params for RpmKeyParams {}

/// `rpm_key`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "rpm_key",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["key"],
    normalize: super::spec::normalize_with::<RpmKeyParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Url("key"),
    family: Some(PackageFamily::Dnf),
    controller_folder: false,
    build_expressions: &[],
};
