//! `tempfile`: a scratch file or folder in the role's `/tmp`.

use std::path::PathBuf;

use planner::modules::tempfile::{TempKind, TempfileParams};
use planner::modules::types::Choice;
use serde_json::Value as Json;

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use crate::rootfs::Kind;

/// `tempfile`: a new name each call (the role's `/tmp` is not part of the layer).
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: TempfileParams = params(planner::modules::tempfile::SPEC.name, args)?;
    let dir = PathBuf::from(p.path.as_ref().map_or("/tmp", |t| t.as_str()));
    let prefix = p.prefix.as_ref().map_or("ansible.", |t| t.as_str());
    let suffix = p.suffix.as_ref().map_or("", |t| t.as_str());
    let fs = ctx.target.fs();
    // Python's mkstemp and mkdtemp make the name only, in a folder that must be there.
    if !fs.meta_follow(&dir)?.is_some_and(|m| m.kind == Kind::Dir) {
        return Err(ModuleError::new(format!(
            "[Errno 2] No such file or directory: '{}'",
            dir.display()
        )));
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut n = stamp;
    let path = loop {
        let candidate = dir.join(format!("{prefix}{n:08x}{suffix}"));
        if !fs.exists(&candidate)? {
            break candidate;
        }
        n = n.wrapping_add(1);
    };
    if !ctx.check {
        match &p.state {
            Some(Choice::Known(TempKind::Directory)) => {
                fs.mkdir_all(&path, 0o700)?;
            }
            _ => fs.write_atomic(&path, b"", Some(0o600))?,
        }
    }
    Ok(ModuleResult::changed(true).with("path", path.display().to_string()))
}
