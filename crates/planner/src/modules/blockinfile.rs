//! `blockinfile`: keep a marked block of lines in a file of the rootfs.

use serde::{Deserialize, Serialize};

use super::lineinfile::LineState;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Mode, Text};

/// Parameters of `blockinfile`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BlockinfileParams {
    /// The file in the rootfs.
    #[serde(alias = "dest", alias = "destfile", alias = "name")]
    pub path: Text,
    /// The lines of the block.
    #[serde(alias = "content")]
    pub block: Option<Text>,
    /// Marker line template with `{mark}` (default `# {mark} ANSIBLE MANAGED BLOCK`).
    pub marker: Option<Text>,
    /// Word for `{mark}` at the start (default BEGIN).
    pub marker_begin: Option<Text>,
    /// Word for `{mark}` at the end (default END).
    pub marker_end: Option<Text>,
    /// Present or absent.
    pub state: Option<Choice<LineState>>,
    /// Insert after the last line matching this (or `EOF`).
    pub insertafter: Option<Text>,
    /// Insert before the last line matching this (or `BOF`).
    pub insertbefore: Option<Text>,
    /// Add a blank line before the block.
    pub prepend_newline: Option<Flag>,
    /// Add a blank line after the block.
    pub append_newline: Option<Flag>,
    /// Create the file if missing.
    pub create: Option<Flag>,
    /// Keep a timestamped backup.
    pub backup: Option<Flag>,
    /// Mode.
    pub mode: Option<Mode>,
    /// Owner name or uid.
    pub owner: Option<Text>,
    /// Group name or gid.
    pub group: Option<Text>,
    /// Command to validate the file before it is put in place.
    pub validate: Option<Text>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
    /// Extended attributes.
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for BlockinfileParams {
    fn check(&self) -> Result<(), String> {
        if self.insertafter.is_some() && self.insertbefore.is_some() {
            return Err("use insertafter or insertbefore, not both".into());
        }
        Ok(())
    }
}

/// `blockinfile`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "blockinfile",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<BlockinfileParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};
