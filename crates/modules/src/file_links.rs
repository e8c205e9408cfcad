//! `file`'s `state: link` and `state: hard`, as Ansible's ensure_symlink and ensure_hardlink.

use std::path::Path;

use super::file_at::FileParams;
use serde_json::Value as Json;

use super::api::{flag, ModuleCtx, ModuleError, ModuleResult};
use super::attrs;
use super::file_at::{attribute_path, update_times, At};
use super::file_diff::FileDiff;
use crate::rootfs::Kind;

/// A symlink's source must exist unless `force` (relative sources from the link's folder), as
/// Ansible checks before it links.
fn check_link_source(
    ctx: &ModuleCtx,
    at: At,
    src: &str,
    p: &FileParams,
) -> Result<(), ModuleError> {
    if flag(&p.force, false) {
        return Ok(());
    }
    let base = if at.prev == "directory" {
        at.path
    } else {
        at.path.parent().unwrap_or(Path::new("/"))
    };
    let absolute = base.join(src);
    if ctx.target.fs().meta_follow(&absolute)?.is_none() {
        let mut error = ModuleError::new(format!(
            "src file does not exist, use \"force=yes\" if you really want to create the link: {}",
            absolute.display()
        ));
        error.fields.insert("src".into(), Json::from(src));
        return Err(error);
    }
    Ok(())
}

/// What is in the way of a new link, refused as Ansible refuses it.
fn check_in_the_way(ctx: &ModuleCtx, at: At, force: bool) -> Result<(), ModuleError> {
    let refuse = |what: &str| {
        ModuleError::new(format!(
            "refusing to convert from {what} to symlink for {}",
            at.shown
        ))
    };
    match at.prev {
        "directory" if !force => Err(refuse("directory")),
        "directory" if !ctx.target.fs().list(at.path)?.is_empty() => {
            Err(ModuleError::new(format!(
                "the directory {} is not empty, refusing to convert it",
                at.shown
            )))
        }
        "file" | "hard" if !force => Err(refuse(at.prev)),
        _ => Ok(()),
    }
}

/// `state: link` (also what a task with no state means for an existing link): `src` defaults
/// to the link's own target when following it; a file or folder in the way is replaced only
/// with `force` (a folder only when empty); attributes go through the link.
pub fn link(ctx: &ModuleCtx, p: &FileParams, at: At) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    let follow = flag(&p.follow, true);
    let src = match &p.src {
        Some(src) => Some(src.to_string()),
        None if follow && at.prev == "link" && fs.meta_follow(at.path)?.is_some() => {
            Some(fs.read_link(at.path)?)
        }
        None => None,
    };
    if let Some(src) = &src {
        check_link_source(ctx, at, src, p)?;
    }
    check_in_the_way(ctx, at, flag(&p.force, false))?;
    let mut diff = FileDiff::new(fs, at.path, at.shown, "link", at.prev)?;
    let mut changed = match (at.prev, &src) {
        ("link", Some(src)) => {
            let old = fs.read_link(at.path)?;
            let differs = old != *src;
            if differs {
                diff.note("src", old, src.as_str());
            }
            differs
        }
        ("link", None) => false,
        (_, None) => {
            return Err(ModuleError::new(
                "src is required for creating new symlinks",
            ))
        }
        _ => true,
    };
    if let (true, false, Some(src)) = (changed, ctx.check, &src) {
        if at.prev == "directory" {
            fs.remove_all(at.path)?;
        }
        fs.symlink(src, at.path)?;
    }
    let result = ModuleResult::default()
        .with("dest", at.shown)
        .with("src", src.clone());
    if ctx.check && fs.meta(at.path)?.is_none() {
        return Ok(ModuleResult {
            changed,
            ..result.with("diff", diff.into_json())
        });
    }
    // A link to nothing takes no attributes through it (Ansible warns and skips them).
    let target = attribute_path(ctx, at.path, p)?;
    if fs.meta(&target)?.is_some() {
        let changes = attrs::apply_changes(fs, &target, &p.owner, &p.group, &p.mode, ctx.check)?;
        diff.note_attrs(&changes);
        changed |= changes.any();
        changed |= update_times(ctx, p, &target, false, &mut diff)?;
    }
    Ok(ModuleResult {
        changed,
        ..result.with("diff", diff.into_json())
    })
}

/// `state: hard`: another file in the way is replaced only with `force`.
pub fn hard_link(ctx: &ModuleCtx, p: &FileParams, at: At) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    let current = fs.meta(at.path)?;
    let mut diff = FileDiff::new(fs, at.path, at.shown, "hard", at.prev)?;
    let Some(src) = p.src.as_ref().map(|s| s.to_string()) else {
        // With no src, a file that is already a hard link keeps its links; only its
        // attributes change.
        if at.prev != "hard" {
            return Err(ModuleError::new(
                "src is required for creating new hardlinks",
            ));
        }
        let changes = attrs::apply_changes(fs, at.path, &p.owner, &p.group, &p.mode, ctx.check)?;
        diff.note_attrs(&changes);
        return Ok(ModuleResult::changed(changes.any())
            .with("dest", at.shown)
            .with("src", Json::Null)
            .with("diff", diff.into_json()));
    };
    let src_meta = fs.meta(Path::new(&src))?.ok_or_else(|| {
        let mut error = ModuleError::new("src does not exist");
        error.fields.insert("dest".into(), Json::from(at.shown));
        error.fields.insert("src".into(), Json::from(src.as_str()));
        error
    })?;
    if at.prev == "link" {
        let old = fs.read_link(at.path)?;
        if old != src {
            diff.note("src", old, src.as_str());
        }
    }
    let mut changed = current.map(|m| m.ino) != Some(src_meta.ino);
    if changed
        && current.is_some_and(|m| m.kind == Kind::File && m.nlink == 1)
        && !flag(&p.force, false)
    {
        let mut error = ModuleError::new("Cannot link, file exists at destination");
        error.fields.insert("dest".into(), Json::from(at.shown));
        error.fields.insert("src".into(), Json::from(src));
        return Err(error);
    }
    if changed && !ctx.check {
        fs.hardlink(Path::new(&src), at.path)?;
    }
    let changes = attrs::apply_changes(fs, at.path, &p.owner, &p.group, &p.mode, ctx.check)?;
    diff.note_attrs(&changes);
    changed |= changes.any();
    changed |= update_times(ctx, p, at.path, false, &mut diff)?;
    Ok(ModuleResult::changed(changed)
        .with("dest", at.shown)
        .with("src", src)
        .with("diff", diff.into_json()))
}
