//! `unarchive`: extract an archive (of the role, the rootfs, or the mirror) into the rootfs.

use std::path::{Path, PathBuf};

use planner::modules::unarchive::UnarchiveParams;
use serde_json::{json, Value as Json};

use super::{attrs, flag, params, ModuleCtx, ModuleError, ModuleResult};
use crate::archive::{extract_tar, tar_reader, Limits};
use crate::rootfs::Kind;

/// `unarchive`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: UnarchiveParams = params("unarchive", args)?;
    let fs = ctx.target.fs();
    let dest = PathBuf::from(p.dest.as_str());
    if let Some(creates) = &p.creates {
        if fs.exists(Path::new(creates.as_str()))? {
            return Ok(ModuleResult {
                skipped: true,
                msg: Some(format!("skipped, since {creates} exists")),
                ..ModuleResult::default()
            });
        }
    }
    if !fs.meta_follow(&dest)?.is_some_and(|m| m.kind == Kind::Dir) {
        return Err(ModuleError::new(format!(
            "dest {} is not a folder; create it first",
            dest.display()
        )));
    }
    let src = p.src.as_str();
    let remote = flag(&p.remote_src, false) || p.copy.as_ref().is_some_and(|c| !c.or(true));
    let file = if src.starts_with("http://") || src.starts_with("https://") {
        let cached = ctx.downloads.fetch(src, None).map_err(ModuleError::new)?;
        std::fs::File::open(&cached)
            .map_err(|e| ModuleError::new(format!("{}: {e}", cached.display())))?
    } else if remote || src.starts_with('/') {
        fs.open_read(Path::new(src))?
    } else {
        let local = ctx.local_path()?;
        std::fs::File::open(&local)
            .map_err(|e| ModuleError::new(format!("{}: {e}", local.display())))?
    };
    if src.to_ascii_lowercase().ends_with(".zip") {
        return Err(ModuleError::new(
            "zip archives are not supported yet; repack the file as .tar.gz",
        ));
    }
    if ctx.check {
        return Ok(ModuleResult {
            changed: true,
            msg: Some(format!("would extract {src} into {}", dest.display())),
            ..ModuleResult::default()
        });
    }
    let reader = tar_reader(src, file).map_err(|e| ModuleError::new(e.to_string()))?;
    let stats = extract_tar(reader, fs, &dest, Limits::default())
        .map_err(|e| ModuleError::new(format!("{src}: {e}")))?;
    let mut changed = stats.written > 0;
    if p.owner.is_some() || p.group.is_some() || p.mode.is_some() {
        for name in &stats.files {
            changed |= attrs::apply(fs, &dest.join(name), &p.owner, &p.group, &p.mode, false)?;
        }
    }
    let mut result = ModuleResult::changed(changed)
        .with("dest", dest.display().to_string())
        .with("src", src);
    if flag(&p.list_files, false) {
        result = result.with("files", json!(stats.files));
    }
    Ok(result)
}
