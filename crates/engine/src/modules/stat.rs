//! `stat`: facts about a path in the rootfs.

use std::path::Path;

use planner::modules::stat::StatParams;
use serde_json::{json, Value as Json};
use sha2::Digest;

use super::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use crate::rootfs::Kind;

/// `stat`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: StatParams = params("stat", args)?;
    let fs = ctx.target.fs();
    let path = Path::new(p.path.as_str());
    let meta = if flag(&p.follow, false) {
        fs.meta_follow(path)?
    } else {
        fs.meta(path)?
    };
    let Some(meta) = meta else {
        return Ok(ModuleResult::changed(false).with("stat", json!({"exists": false})));
    };
    let mut stat = json!({
        "exists": true,
        "path": p.path.to_string(),
        "mode": format!("{:04o}", meta.mode),
        "isdir": meta.kind == Kind::Dir,
        "isreg": meta.kind == Kind::File,
        "islnk": meta.kind == Kind::Symlink,
        "uid": meta.uid,
        "gid": meta.gid,
        "size": meta.size,
        "mtime": meta.mtime,
        "executable": meta.mode & 0o111 != 0,
    });
    if meta.kind == Kind::Symlink {
        stat["lnk_target"] = Json::String(fs.read_link(path)?);
    }
    let algorithm = p.checksum_algorithm.as_ref().map(|a| a.to_string());
    if meta.kind == Kind::File && flag(&p.get_checksum, algorithm.is_some()) {
        match algorithm.as_deref().unwrap_or("sha256") {
            "sha256" => {
                stat["checksum"] =
                    Json::String(format!("{:x}", sha2::Sha256::digest(fs.read(path)?)))
            }
            other => {
                return Err(ModuleError::new(format!(
                    "checksum_algorithm {other} is not supported; use sha256"
                )))
            }
        }
    }
    Ok(ModuleResult::changed(false).with("stat", stat))
}
