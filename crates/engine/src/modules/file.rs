//! `file`: folders, links, permissions, touch and removal in the rootfs.

use std::io::Read;
use std::path::{Path, PathBuf};

use planner::modules::file::{FileParams, FileState};
use planner::modules::types::{Choice, Mode};
use serde_json::Value as Json;

use super::{attrs, flag, params, ModuleCtx, ModuleError, ModuleResult};
use crate::rootfs::{Kind, Meta, RootFs};

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

/// Whether the file's first 8 KiB hold a NUL byte (what cannot be read counts as text).
fn appears_binary(fs: &RootFs, path: &Path) -> bool {
    let mut head = Vec::with_capacity(8192);
    let read = fs
        .open_read(path)
        .ok()
        .map(|file| file.take(8192).read_to_end(&mut head).is_ok());
    read == Some(true) && head.contains(&0)
}

/// `file`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: FileParams = params("file", args)?;
    // Ansible's file failures name the path they are about.
    ensure(ctx, &p).map_err(|mut e| {
        if !e.fields.contains_key("dest") {
            e.fields
                .entry("path")
                .or_insert_with(|| Json::from(p.path.to_string()));
        }
        e
    })
}

fn ensure(ctx: &ModuleCtx, p: &FileParams) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    let path = Path::new(p.path.as_str());
    if p.diff_peek.is_some() {
        return Ok(ModuleResult::changed(false)
            .with("path", p.path.to_string())
            .with("appears_binary", appears_binary(fs, path)));
    }
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
                    if flag(&p.follow, true)
                        && fs.meta_follow(path)?.is_some_and(|m| m.kind == Kind::Dir) => {}
                Some(other) => {
                    let what = match other {
                        Kind::Symlink => "link",
                        _ => "file",
                    };
                    return Err(ModuleError::new(format!(
                        "{} already exists as a {what}",
                        path.display()
                    )));
                }
                None => {
                    changed = true;
                    if !ctx.check {
                        attrs::make_folders(fs, path, &p.owner, &p.group, &p.mode)?;
                    }
                }
            }
            if flag(&p.recurse, false) {
                changed |= apply_recursive(ctx, path, p)?;
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
        FileState::Link => return link(ctx, path, p, current),
        FileState::Hard => return hard_link(ctx, path, p, current),
    }
    if !(ctx.check && current.is_none()) {
        let target = attribute_path(ctx, path, p)?;
        changed |= attrs::apply(fs, &target, &p.owner, &p.group, &p.mode, ctx.check)?;
    }
    // Through a link, Ansible reports the path it followed to.
    let shown = match state {
        FileState::Directory | FileState::File => attribute_path(ctx, path, p)?,
        _ => path.to_path_buf(),
    };
    Ok(ModuleResult::changed(changed).with("path", shown.display().to_string()))
}

/// Where the task's owner, group and mode go: through a link to what it points at when
/// `follow` (Ansible's default), else the path itself.
fn attribute_path(ctx: &ModuleCtx, path: &Path, p: &FileParams) -> Result<PathBuf, ModuleError> {
    let fs = ctx.target.fs();
    if flag(&p.follow, true) && fs.meta(path)?.is_some_and(|m| m.kind == Kind::Symlink) {
        Ok(fs.resolve(path)?)
    } else {
        Ok(path.to_path_buf())
    }
}

/// `state: link` (also what a task with no state means for an existing link), as Ansible's
/// ensure_symlink: `src` defaults to the link's own target; a file or folder in the way is
/// replaced only with `force` (a folder only when empty); attributes go through the link.
fn link(
    ctx: &ModuleCtx,
    path: &Path,
    p: &FileParams,
    current: Option<Meta>,
) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    let force = flag(&p.force, false);
    let src = match (&p.src, current.map(|m| m.kind)) {
        (Some(src), _) => {
            check_link_source(ctx, path, src.as_str(), current.map(|m| m.kind), p)?;
            src.to_string()
        }
        (None, Some(Kind::Symlink)) => fs.read_link(path)?,
        (None, _) => {
            return Err(ModuleError::new(
                "src is required for creating new symlinks",
            ))
        }
    };
    let refuse = |what: &str| {
        ModuleError::new(format!(
            "refusing to convert from {what} to symlink for {}",
            path.display()
        ))
    };
    let mut changed = match current.map(|m| m.kind) {
        None => true,
        Some(Kind::Symlink) => fs.read_link(path)? != src,
        Some(Kind::Dir) if !force => return Err(refuse("directory")),
        Some(Kind::Dir) if !fs.list(path)?.is_empty() => {
            return Err(ModuleError::new(format!(
                "the directory {} is not empty, refusing to convert it",
                path.display()
            )))
        }
        Some(Kind::Dir) => true,
        Some(_) if !force => return Err(refuse("file")),
        Some(_) => true,
    };
    if changed && !ctx.check {
        if current.is_some_and(|m| m.kind == Kind::Dir) {
            fs.remove_all(path)?;
        }
        fs.symlink(&src, path)?;
    }
    // A link to nothing takes no attributes through it (Ansible warns and skips them).
    let target = attribute_path(ctx, path, p)?;
    if fs.meta(&target)?.is_some() {
        changed |= attrs::apply(fs, &target, &p.owner, &p.group, &p.mode, ctx.check)?;
    }
    Ok(ModuleResult::changed(changed)
        .with("dest", p.path.to_string())
        // With no src given, Ansible reports the link's target when it follows it, else none.
        .with(
            "src",
            (p.src.is_some() || flag(&p.follow, true)).then_some(src),
        ))
}

/// `state: hard`, as Ansible's ensure_hardlink: another file in the way is replaced only with
/// `force`.
fn hard_link(
    ctx: &ModuleCtx,
    path: &Path,
    p: &FileParams,
    current: Option<Meta>,
) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    let Some(src) = p.src.as_ref().map(|s| s.to_string()) else {
        // With no src, a file that is already a hard link keeps its links; only its
        // attributes change.
        if !current.is_some_and(|m| m.kind == Kind::File && m.nlink > 1) {
            return Err(ModuleError::new(
                "src is required for creating new hardlinks",
            ));
        }
        let changed = attrs::apply(fs, path, &p.owner, &p.group, &p.mode, ctx.check)?;
        return Ok(ModuleResult::changed(changed)
            .with("dest", p.path.to_string())
            .with("src", Json::Null));
    };
    let src_meta = fs
        .meta(Path::new(&src))?
        .ok_or_else(|| ModuleError::new(format!("src does not exist: {src}")))?;
    let mut changed = current.map(|m| m.ino) != Some(src_meta.ino);
    if changed
        && current.is_some_and(|m| m.kind == Kind::File && m.nlink == 1)
        && !flag(&p.force, false)
    {
        let mut error = ModuleError::new("Cannot link, file exists at destination");
        error
            .fields
            .insert("dest".into(), Json::from(p.path.to_string()));
        error.fields.insert("src".into(), Json::from(src));
        return Err(error);
    }
    if changed && !ctx.check {
        fs.hardlink(Path::new(&src), path)?;
    }
    changed |= attrs::apply(fs, path, &p.owner, &p.group, &p.mode, ctx.check)?;
    Ok(ModuleResult::changed(changed)
        .with("dest", p.path.to_string())
        .with("src", src))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::{DirTarget, Target};

    #[test]
    fn a_nul_in_the_head_looks_binary() {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["root", "scratch"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        std::fs::write(dir.path().join("root/bin"), b"ab\0c").expect("write");
        std::fs::write(dir.path().join("root/text"), b"abc").expect("write");
        let target =
            DirTarget::new(&dir.path().join("root"), &dir.path().join("scratch")).expect("target");
        assert!(appears_binary(target.fs(), Path::new("/bin")));
        assert!(!appears_binary(target.fs(), Path::new("/text")));
        assert!(!appears_binary(target.fs(), Path::new("/missing")));
    }
}
