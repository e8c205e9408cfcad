//! `file`: directories, links, permissions and removal in the rootfs.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Mode, Text};

crate::choices!(
    /// What `file` makes of the path.
    FileState { File => "file", Directory => "directory", Link => "link", Hard => "hard", Touch => "touch", Absent => "absent" }
);

/// Parameters of `file`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileParams {
    /// The path in the rootfs.
    #[serde(alias = "dest", alias = "name")]
    pub path: Text,
    /// What the path should be.
    pub state: Option<Choice<FileState>>,
    /// Link target for `link`/`hard`.
    pub src: Option<Text>,
    /// Mode.
    pub mode: Option<Mode>,
    /// Owner name or uid.
    pub owner: Option<Text>,
    /// Group name or gid.
    pub group: Option<Text>,
    /// Apply owner/group/mode below a directory.
    pub recurse: Option<Flag>,
    /// Replace what is in the way of a link.
    pub force: Option<Flag>,
    /// Follow symlinks.
    pub follow: Option<Flag>,
    /// mtime for `touch` (`preserve`, `now` or a time).
    pub modification_time: Option<Text>,
    /// Format of `modification_time`.
    pub modification_time_format: Option<Text>,
    /// atime for `touch`.
    pub access_time: Option<Text>,
    /// Format of `access_time`.
    pub access_time_format: Option<Text>,
    /// Ansible's internal probe: report only whether the file looks binary.
    #[serde(rename = "_diff_peek")]
    pub diff_peek: Option<Flag>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
    /// Extended attributes (`chattr` letters).
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

/// A link's `src` may be left out where the link exists (Ansible keeps its target), so its
/// absence is an error of the run, not of the plan.
impl Params for FileParams {}

/// `file`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "file",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<FileParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};
