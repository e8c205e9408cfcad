//! `patch` (`ansible.posix.patch`): a patch file of the role applied to files of the image with
//! `patch` in the rootfs.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Text};

/// Parameters of `patch`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PatchParams {
    /// The patch file (a role file).
    pub src: Text,
    /// The file to patch in the image.
    #[serde(alias = "originalfile")]
    pub dest: Option<Text>,
    /// The folder paths in the patch are relative to.
    pub basedir: Option<Text>,
    /// Leading path components to strip (`-p`).
    pub strip: Option<Text>,
    /// Accepted: the patch is always read from the role.
    pub remote_src: Option<Flag>,
    /// Ignore whitespace.
    pub ignore_whitespace: Option<Flag>,
    /// Accepted.
    pub backup: Option<Flag>,
    /// Accepted.
    pub binary: Option<Flag>,
}

impl Params for PatchParams {
    fn check(&self) -> Result<(), String> {
        if self.dest.is_none() && self.basedir.is_none() {
            return Err("patch needs dest or basedir".into());
        }
        Ok(())
    }
}

/// `patch`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "patch",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<PatchParams>,
    plan_time: PlanTime::PushPatch,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
