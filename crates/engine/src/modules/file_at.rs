//! What `file`'s states share (`file` and its links in `file_links`): the path a state acts
//! on, where the task's attributes go, and the times it sets.

use std::path::{Path, PathBuf};

use planner::modules::file::FileParams;

use super::api::{flag, ModuleCtx, ModuleError};
use super::file_diff::FileDiff;
use super::file_times;
use crate::rootfs::Kind;

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
