//! `file`: directories, links, permissions and removal in the rootfs.
//!
//! Folders, links, permissions, touch and removal in the rootfs.

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::file_at::{attribute_path, update_times, At};
pub use super::file_at::{FileParams, FileState};
use super::file_diff::{prev_state, FileDiff};
use super::pathinfo::name_of;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::Choice;
use super::{attrs, file_links};
use crate::rootfs::{Kind, RootFs};
use serde_json::Value as Json;
use std::io::Read;
use std::path::{Path, PathBuf};

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

// How it runs in the rootfs.

/// `recurse`: what is below `dir` takes the attributes and times, as Ansible's walk gives
/// them: a link itself and, with `follow`, what it leads to (a folder's content too).
fn apply_recursive(ctx: &ModuleCtx, dir: &Path, p: &FileParams) -> Result<bool, ModuleError> {
    let fs = ctx.target.fs();
    let set = |path: &Path| -> Result<bool, ModuleError> {
        let changed = attrs::apply(fs, path, &p.owner, &p.group, &p.mode, ctx.check)?;
        Ok(changed | update_times(ctx, p, path, false, &mut FileDiff::default())?)
    };
    let mut changed = false;
    for name in fs.list(dir)? {
        let path = dir.join(&name);
        let Some(meta) = fs.meta(&path)? else {
            continue;
        };
        changed |= set(&path)?;
        match meta.kind {
            Kind::Dir => changed |= apply_recursive(ctx, &path, p)?,
            Kind::Symlink if flag(&p.follow, true) => {
                let target = dir.join(fs.read_link(&path)?);
                if let Some(found) = fs.meta_follow(&target)? {
                    if found.kind == Kind::Dir {
                        changed |= apply_recursive(ctx, &target, p)?;
                    }
                    changed |= set(&fs.resolve(&target)?)?;
                }
            }
            _ => {}
        }
    }
    Ok(changed)
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
    let p: FileParams = params(SPEC.name, args)?;
    let absent = matches!(p.state, Some(Choice::Known(FileState::Absent)));
    let warnings = if ctx.check && !absent {
        missing_owners(ctx.target.fs(), &p)?
    } else {
        Vec::new()
    };
    let warned = |fields: &mut serde_json::Map<String, Json>| {
        if !warnings.is_empty() {
            fields.insert("warnings".into(), Json::from(warnings.clone()));
        }
    };
    // Ansible's file failures name the path they are about.
    match ensure(ctx, &p) {
        Ok(mut result) => {
            warned(&mut result.fields);
            Ok(result)
        }
        Err(mut e) => {
            if !e.fields.contains_key("dest") {
                e.fields
                    .entry("path")
                    .or_insert_with(|| Json::from(p.path.to_string()));
            }
            warned(&mut e.fields);
            Err(e)
        }
    }
}

/// In check mode, Ansible's warnings for an owner or group the image does not have (yet).
fn missing_owners(fs: &RootFs, p: &FileParams) -> Result<Vec<String>, ModuleError> {
    let mut warnings = Vec::new();
    for (value, file, what) in [
        (&p.owner, "/etc/passwd", "user"),
        (&p.group, "/etc/group", "group"),
    ] {
        let Some(name) = value.as_ref().map(|v| v.as_str()) else {
            continue;
        };
        let missing = match name.parse::<u32>() {
            Ok(id) => name_of(fs, file, id)?.is_none().then(|| {
                let key = if what == "user" { "uid" } else { "gid" };
                format!("{what} with {key} {id}")
            }),
            Err(_) => attrs::lookup_id(fs, file, name)
                .is_err()
                .then(|| format!("{what} {name}")),
        };
        if let Some(missing) = missing {
            warnings.push(format!(
                "failed to look up {missing}. Create {what} up to this point in real play"
            ));
        }
    }
    Ok(warnings)
}

/// An error whose result names the path.
fn path_error(msg: String, path: &str) -> ModuleError {
    let mut error = ModuleError::new(msg);
    error.fields.insert("path".into(), Json::from(path));
    error
}

fn ensure(ctx: &ModuleCtx, p: &FileParams) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    let mut path = PathBuf::from(p.path.as_str());
    if p.diff_peek.is_some() {
        return Ok(ModuleResult::changed(false)
            .with("path", p.path.to_string())
            .with("appears_binary", appears_binary(fs, &path)));
    }
    let state = match &p.state {
        Some(Choice::Known(state)) => Some(*state),
        Some(Choice::Deferred(t)) => {
            return Err(ModuleError::new(format!("state '{t}' was not resolved")))
        }
        None => None,
    };
    // A hard link made in a folder takes the name of its source.
    if !matches!(state, Some(FileState::Link | FileState::Absent))
        && fs.meta_follow(&path)?.is_some_and(|m| m.kind == Kind::Dir)
    {
        if let Some(name) = p
            .src
            .as_ref()
            .and_then(|s| Path::new(s.as_str()).file_name())
        {
            path = path.join(name);
        }
    }
    let shown = path.display().to_string();
    let prev = prev_state(fs, &path)?;
    let recurse = flag(&p.recurse, false);
    let state = state.unwrap_or(match prev {
        "directory" => FileState::Directory,
        "link" => FileState::Link,
        "hard" => FileState::Hard,
        "absent" if recurse => FileState::Directory,
        _ => FileState::File,
    });
    if recurse && state != FileState::Directory {
        return Err(path_error(
            "recurse option requires state to be 'directory'".into(),
            &shown,
        ));
    }
    if p.src.is_some() && !matches!(state, FileState::Link | FileState::Hard) {
        return Err(path_error(
            "src option requires state to be 'link' or 'hard'".into(),
            &shown,
        ));
    }
    let at = At {
        path: &path,
        shown: &shown,
        prev,
    };
    match state {
        FileState::Absent => absent(ctx, at),
        FileState::Directory => directory(ctx, p, at),
        FileState::File => file_attributes(ctx, p, at),
        FileState::Touch => touch(ctx, p, at),
        FileState::Link => file_links::link(ctx, p, at),
        FileState::Hard => file_links::hard_link(ctx, p, at),
    }
}

fn absent(ctx: &ModuleCtx, at: At) -> Result<ModuleResult, ModuleError> {
    let result = ModuleResult::changed(at.prev != "absent").with("path", at.shown);
    if at.prev == "absent" {
        return Ok(result.with("state", "absent"));
    }
    let diff = FileDiff::new(ctx.target.fs(), at.path, at.shown, "absent", at.prev)?;
    if !ctx.check {
        ctx.target.fs().remove_all(at.path)?;
    }
    Ok(result
        .with("diff", diff.into_json())
        .with("state", "absent"))
}

/// With `follow`, a link is replaced by the path it leads to (Ansible's realpath).
fn followed(ctx: &ModuleCtx, p: &FileParams, at: At) -> Result<(PathBuf, String), ModuleError> {
    if flag(&p.follow, true) && at.prev == "link" {
        let real = ctx.target.fs().resolve(at.path)?;
        let shown = real.display().to_string();
        return Ok((real, shown));
    }
    Ok((at.path.to_path_buf(), at.shown.to_owned()))
}

fn directory(ctx: &ModuleCtx, p: &FileParams, at: At) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    let (path, shown) = followed(ctx, p, at)?;
    let prev = prev_state(fs, &path)?;
    let mut diff = FileDiff::new(fs, &path, &shown, "directory", prev)?;
    let done = |changed: bool, diff: FileDiff| {
        Ok(ModuleResult::changed(changed)
            .with("path", shown.clone())
            .with("diff", diff.into_json()))
    };
    match prev {
        "absent" if ctx.check => return done(true, diff),
        "absent" => {
            let changes = attrs::make_folders(fs, &path, &p.owner, &p.group, &p.mode)?;
            diff.note_attrs(&changes);
            update_times(ctx, p, &path, false, &mut diff)?;
            return done(true, diff);
        }
        "directory" => {}
        other => {
            return Err(path_error(
                format!("{shown} already exists as a {other}"),
                &shown,
            ))
        }
    }
    let changes = attrs::apply_changes(fs, &path, &p.owner, &p.group, &p.mode, ctx.check)?;
    diff.note_attrs(&changes);
    let mut changed = changes.any();
    changed |= update_times(ctx, p, &path, false, &mut diff)?;
    if flag(&p.recurse, false) {
        changed |= apply_recursive(ctx, &path, p)?;
    }
    done(changed, diff)
}

fn file_attributes(ctx: &ModuleCtx, p: &FileParams, at: At) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    let (path, shown) = followed(ctx, p, at)?;
    let prev = prev_state(fs, &path)?;
    if !matches!(prev, "file" | "hard") {
        let mut error = path_error(format!("file ({shown}) is {prev}, cannot continue"), &shown);
        error.fields.insert("state".into(), Json::from(prev));
        return Err(error);
    }
    let mut diff = FileDiff::new(fs, &path, &shown, "file", prev)?;
    let changes = attrs::apply_changes(fs, &path, &p.owner, &p.group, &p.mode, ctx.check)?;
    diff.note_attrs(&changes);
    let changed = changes.any() | update_times(ctx, p, &path, false, &mut diff)?;
    Ok(ModuleResult::changed(changed)
        .with("path", shown)
        .with("diff", diff.into_json()))
}

/// `state: touch`: an empty file where there is none; times set to now unless `preserve`.
fn touch(ctx: &ModuleCtx, p: &FileParams, at: At) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    let result = ModuleResult::default().with("dest", at.shown);
    let mut changed = false;
    if at.prev == "absent" {
        if ctx.check {
            return Ok(ModuleResult {
                changed: true,
                ..result
            });
        }
        // A new file is made as open() makes it (0666 less the umask), then given its mode.
        fs.write_atomic(at.path, b"", Some(0o644))?;
        changed = true;
    }
    let mut diff = FileDiff::new(fs, at.path, at.shown, "touch", at.prev)?;
    let attributes = |diff: &mut FileDiff| -> Result<bool, ModuleError> {
        let target = attribute_path(ctx, at.path, p)?;
        let changes = attrs::apply_changes(fs, &target, &p.owner, &p.group, &p.mode, ctx.check)?;
        diff.note_attrs(&changes);
        Ok(changes.any() | update_times(ctx, p, &target, true, diff)?)
    };
    match attributes(&mut diff) {
        Ok(more) => changed |= more,
        // What it could not finish, it does not leave behind.
        Err(e) => {
            if at.prev == "absent" {
                fs.remove_all(at.path)?;
            }
            return Err(e);
        }
    }
    Ok(ModuleResult {
        changed,
        ..result.with("diff", diff.into_json())
    })
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
