//! What `file`'s states share (`file` and its links in `file_links`): the path a state acts
//! on, where the task's attributes go, and the times it sets.

use std::path::{Path, PathBuf};

use super::types::{Choice, Flag, Mode, Text};
use serde::{Deserialize, Serialize};

use super::api::{flag, ModuleCtx, ModuleError};
use super::file_diff::FileDiff;
use super::file_times;
use crate::rootfs::Kind;

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

/// The path a state acts on, as the result names it, and what it was before.
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    /// In the rootfs.
    pub path: &'a Path,
    /// As the result names it.
    pub shown: &'a str,
    /// Its state before ([`prev_state`](super::file_diff::prev_state)).
    pub prev: &'static str,
}

/// Sets the times the task asks for on `path` (`touch`: now by default); whether they changed.
pub fn update_times(
    ctx: &ModuleCtx,
    p: &FileParams,
    path: &Path,
    touch: bool,
    diff: &mut FileDiff,
) -> Result<bool, ModuleError> {
    let fs = ctx.target.fs();
    let mtime = file_times::when(fs, &p.modification_time, &p.modification_time_format, touch)?;
    let atime = file_times::when(fs, &p.access_time, &p.access_time_format, touch)?;
    file_times::update(fs, path, mtime, atime, ctx.check, diff)
}

/// Where the task's owner, group and mode go: through a link to what it points at when
/// `follow` (Ansible's default), else the path itself.
pub fn attribute_path(
    ctx: &ModuleCtx,
    path: &Path,
    p: &FileParams,
) -> Result<PathBuf, ModuleError> {
    let fs = ctx.target.fs();
    if flag(&p.follow, true) && fs.meta(path)?.is_some_and(|m| m.kind == Kind::Symlink) {
        Ok(fs.resolve(path)?)
    } else {
        Ok(path.to_path_buf())
    }
}
