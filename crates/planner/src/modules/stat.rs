//! `stat`: facts about a path in the rootfs.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Text};

/// Parameters of `stat`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StatParams {
    /// The path in the rootfs.
    #[serde(alias = "dest", alias = "name")]
    pub path: Text,
    /// Follow symlinks.
    pub follow: Option<Flag>,
    /// Also report the MD5 (`md5`).
    pub get_md5: Option<Flag>,
    /// Compute a checksum.
    pub get_checksum: Option<Flag>,
    /// Checksum algorithm.
    #[serde(alias = "checksum", alias = "checksum_algo")]
    pub checksum_algorithm: Option<Text>,
    /// Detect the MIME type.
    #[serde(alias = "mime", alias = "mime_type", alias = "mime-type")]
    pub get_mime: Option<Flag>,
    /// Read extended attributes.
    #[serde(alias = "attr", alias = "attributes")]
    pub get_attributes: Option<Flag>,
}

impl Params for StatParams {}

/// `stat`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "stat",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<StatParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};
