//! `file`: folders, links, permissions, touch and removal in the rootfs.

use std::path::Path;

use planner::modules::file::{FileParams, FileState};
use planner::modules::types::{Choice, Mode};
use serde_json::Value as Json;

use super::{attrs, flag, params, ModuleCtx, ModuleError, ModuleResult};
use crate::rootfs::Kind;

fn apply_recursive(ctx: &ModuleCtx, path: &Path, p: &FileParams) -> Result<bool, ModuleError> {
    let fs = ctx.target.fs();
    let mut changed = attrs::apply(fs, path, &p.owner, &p.group, &p.mode, ctx.check)?;
    if fs.meta(path)?.is_some_and(|m| m.kind == Kind::Dir) {
        for name in fs.list(path)? {
            changed |= apply_recursive(ctx, &path.join(name), p)?;
        }
    }
    Ok(changed)
}

/// A symlink's source must exist unless `force` (relative sources from the link's folder), as
/// Ansible checks before it links.
fn check_link_source(
    ctx: &ModuleCtx,
    path: &Path,
    src: &str,
    current: Option<Kind>,
    p: &FileParams,
) -> Result<(), ModuleError> {
    if flag(&p.force, false) {
        return Ok(());
    }
    let base = if current == Some(Kind::Dir) {
        path
    } else {
        path.parent().unwrap_or(Path::new("/"))
    };
    let absolute = base.join(src);
    if ctx.target.fs().meta_follow(&absolute)?.is_none() {
        return Err(ModuleError::new(format!(
            "src file does not exist, use \"force=yes\" if you really want to create the link: {}",
            absolute.display()
        )));
    }
    Ok(())
}

/// `file`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: FileParams = params("file", args)?;
    let fs = ctx.target.fs();
    let path = Path::new(p.path.as_str());
    let current = fs.meta(path)?;
    let state = match &p.state {
        Some(Choice::Known(state)) => *state,
        Some(Choice::Deferred(t)) => {
            return Err(ModuleError::new(format!("state '{t}' was not resolved")))
        }
        None => match current.map(|m| m.kind) {
            Some(Kind::Dir) => FileState::Directory,
            Some(Kind::Symlink) => FileState::Link,
            Some(_) => FileState::File,
            None => {
                return Err(ModuleError::new(format!(
                    "{} does not exist; say state=touch or state=directory to create it",
                    path.display()
                )))
            }
        },
    };
    let mut changed = false;
    match state {
        FileState::Absent => {
            changed = current.is_some();
            if changed && !ctx.check {
                fs.remove_all(path)?;
            }
            return Ok(ModuleResult::changed(changed)
                .with("path", p.path.to_string())
                .with("state", "absent"));
        }
        FileState::Directory => {
            match current.map(|m| m.kind) {
                Some(Kind::Dir) => {}
                Some(Kind::Symlink)
                    if fs.meta_follow(path)?.is_some_and(|m| m.kind == Kind::Dir) => {}
                Some(_) => {
                    return Err(ModuleError::new(format!(
                        "{} exists and is not a folder",
                        path.display()
                    )))
                }
                None => {
                    changed = true;
                    if !ctx.check {
                        attrs::make_folders(fs, path, &p.owner, &p.group, &p.mode)?;
                    }
                }
            }
            if flag(&p.recurse, false) {
                changed |= apply_recursive(ctx, path, &p)?;
            }
        }
        FileState::File => {
            if current.is_none() {
                return Err(ModuleError::new(format!(
                    "{} does not exist; use state=touch to create it",
                    path.display()
                )));
            }
        }
        FileState::Touch => {
            if current.is_none() {
                changed = true;
                if !ctx.check {
                    let mode = match &p.mode {
                        Some(Mode::Octal(bits)) => Some(*bits),
                        _ => Some(0o644),
                    };
                    fs.write_atomic(path, b"", mode)?;
                }
            } else {
                // Ansible's touch updates the times of an existing file and reports a change.
                changed = p
                    .modification_time
                    .as_ref()
                    .map(|t| t.as_str() != "preserve")
                    .unwrap_or(true);
            }
        }
        FileState::Link | FileState::Hard => {
            let src = p
                .src
                .as_ref()
                .map(|s| s.to_string())
                .ok_or_else(|| ModuleError::new("links need src"))?;
            if state == FileState::Link {
                check_link_source(ctx, path, &src, current.map(|m| m.kind), &p)?;
                let same =
                    current.is_some_and(|m| m.kind == Kind::Symlink) && fs.read_link(path)? == src;
                if !same {
                    if current.is_some_and(|m| m.kind == Kind::Dir) {
                        return Err(ModuleError::new(format!(
                            "{} is a folder; remove it before linking",
                            path.display()
                        )));
                    }
                    if current.is_some_and(|m| m.kind != Kind::Symlink) && !flag(&p.force, false) {
                        return Err(ModuleError::new(format!(
                            "{} exists and is not a link; set force: yes to replace it",
                            path.display()
                        )));
                    }
                    changed = true;
                    if !ctx.check {
                        fs.symlink(&src, path)?;
                    }
                }
            } else {
                let src_meta = fs.meta(Path::new(&src))?.ok_or_else(|| {
                    ModuleError::new(format!("hard link source {src} does not exist"))
                })?;
                if current.map(|m| m.ino) != Some(src_meta.ino) {
                    changed = true;
                    if !ctx.check {
                        fs.hardlink(Path::new(&src), path)?;
                    }
                }
            }
            return Ok(ModuleResult::changed(changed).with("path", p.path.to_string()));
        }
    }
    if !(ctx.check && current.is_none()) {
        changed |= attrs::apply(fs, path, &p.owner, &p.group, &p.mode, ctx.check)?;
    }
    Ok(ModuleResult::changed(changed).with("path", p.path.to_string()))
}
