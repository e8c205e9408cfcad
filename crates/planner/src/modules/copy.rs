//! `copy`: put a file from the role's `files/` (or inline `content`) into the rootfs.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime, exactly_one};
use super::types::{Content, Flag, Mode, Text};

/// Parameters of `copy`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CopyParams {
    /// Source file or directory (role `files/`, or in the rootfs with `remote_src`).
    pub src: Option<Text>,
    /// Inline content instead of `src` (a mapping or list is written as JSON).
    pub content: Option<Content>,
    /// Destination in the rootfs.
    pub dest: Text,
    /// Mode of the written file.
    pub mode: Option<Mode>,
    /// Owner name or uid.
    pub owner: Option<Text>,
    /// Group name or gid.
    pub group: Option<Text>,
    /// Mode of directories created while copying a directory.
    pub directory_mode: Option<Mode>,
    /// `src` is a path in the rootfs.
    pub remote_src: Option<Flag>,
    /// Replace an existing different file (default yes).
    pub force: Option<Flag>,
    /// Keep a timestamped backup of a replaced file.
    pub backup: Option<Flag>,
    /// Follow symlinks at the destination.
    pub follow: Option<Flag>,
    /// Follow symlinks in the source.
    pub local_follow: Option<Flag>,
    /// Command to validate the file before it is put in place (`%s` is the file).
    pub validate: Option<Text>,
    /// Expected sha1 of the source (accepted for compatibility).
    pub checksum: Option<Text>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
    /// Extended attributes (`chattr` letters).
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for CopyParams {
    fn check(&self) -> Result<(), String> {
        exactly_one(
            "copy",
            &[
                ("src", self.src.is_some()),
                ("content", self.content.is_some()),
            ],
        )
    }
}

/// `copy`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "copy",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<CopyParams>,
    plan_time: PlanTime::PushSource,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};
