//! `unarchive`: extract tar, tar.gz, tgz, tar.xz or zip into the rootfs.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Int, Mode, Text};

/// Parameters of `unarchive`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UnarchiveParams {
    /// The archive: relative to the role's `files/`, an absolute path in the rootfs, or a URL.
    pub src: Text,
    /// Directory to extract into.
    pub dest: Text,
    /// `src` is already in the rootfs.
    pub remote_src: Option<Flag>,
    /// Old name of `remote_src`, inverted.
    pub copy: Option<Flag>,
    /// Skip when this path exists.
    pub creates: Option<Text>,
    /// Paths to leave out.
    pub exclude: Option<Vec<Text>>,
    /// Only these paths.
    pub include: Option<Vec<Text>>,
    /// Extra options for the extractor.
    pub extra_opts: Option<Vec<Text>>,
    /// Do not replace newer files.
    pub keep_newer: Option<Flag>,
    /// Return the list of extracted files.
    pub list_files: Option<Flag>,
    /// Mode applied to extracted files.
    pub mode: Option<Mode>,
    /// Owner of extracted files.
    pub owner: Option<Text>,
    /// Group of extracted files.
    pub group: Option<Text>,
    /// Verify TLS certificates for a URL `src`.
    pub validate_certs: Option<Flag>,
    /// Read buffer size.
    pub io_buffer_size: Option<Int>,
    /// Decrypt vault files (accepted; vault is refused elsewhere).
    pub decrypt: Option<Flag>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
    /// Extended attributes.
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for UnarchiveParams {}

/// `unarchive`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "unarchive",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["src"],
    normalize: super::spec::normalize_with::<UnarchiveParams>,
    plan_time: PlanTime::PushSource,
    downloads: Downloads::RemoteSource("src"),
    family: None,
    controller_folder: true,
    build_expressions: &[],
};
