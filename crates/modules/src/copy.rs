//! `copy`: put a file from the role's `files/` (or inline `content`) into the rootfs.
//!
//! A file (or folder) of the role, inline `content`, or a rootfs path into the rootfs.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::attrs;
use super::spec::{exactly_one, Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Content, Flag, Mode, Text};
use crate::rootfs::Kind;
use crate::target::Cmd;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};

/// Parameters of `copy`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CopyParams {
    /// Source file or directory (role `files/`, or in the rootfs with `remote_src`).
    pub src: Option<Text>,
    /// Inline content instead of `src` (a mapping or list is written as JSON).
    pub content: Option<Content>,
    /// Destination in the rootfs.
    pub dest: Text,
    /// Mode of the written file.
    pub mode: Option<Mode>,
    /// Owner name or uid.
    pub owner: Option<Text>,
    /// Group name or gid.
    pub group: Option<Text>,
    /// Mode of directories created while copying a directory.
    pub directory_mode: Option<Mode>,
    /// `src` is a path in the rootfs.
    pub remote_src: Option<Flag>,
    /// Replace an existing different file (default yes).
    pub force: Option<Flag>,
    /// Keep a timestamped backup of a replaced file.
    pub backup: Option<Flag>,
    /// Follow symlinks at the destination.
    pub follow: Option<Flag>,
    /// Follow symlinks in the source.
    pub local_follow: Option<Flag>,
    /// Command to validate the file before it is put in place (`%s` is the file).
    pub validate: Option<Text>,
    /// Expected sha1 of the source (accepted for compatibility).
    pub checksum: Option<Text>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
    /// Extended attributes (`chattr` letters).
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for CopyParams {
    fn check(&self) -> Result<(), String> {
        exactly_one(
            "copy",
            &[
                ("src", self.src.is_some()),
                ("content", self.content.is_some()),
            ],
        )
    }
}

/// `copy`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "copy",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<CopyParams>,
    plan_time: PlanTime::PushSource,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// What to put at a destination file and how.
pub struct Placement<'a> {
    /// The new bytes.
    pub bytes: &'a [u8],
    /// Mode, owner, group.
    pub mode: &'a Option<Mode>,
    /// Owner.
    pub owner: &'a Option<Text>,
    /// Group.
    pub group: &'a Option<Text>,
    /// Replace a different existing file.
    pub force: bool,
    /// Command validating the new file (`%s`).
    pub validate: Option<&'a str>,
    /// Keep a timestamped copy of a file it replaces.
    pub backup: bool,
}

/// Writes `bytes` to `dest` when different; applies attributes. Shared by copy and template.
pub fn place(ctx: &ModuleCtx, dest: &Path, how: &Placement) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    let existing = match fs.meta_follow(dest)? {
        Some(meta) if meta.kind == Kind::Dir => {
            return Err(ModuleError::new(format!(
                "{} is a folder; name the file",
                dest.display()
            )))
        }
        Some(_) => Some(fs.read(dest)?),
        None => None,
    };
    let content_changed = match &existing {
        Some(old) => old.as_slice() != how.bytes && how.force,
        None => true,
    };
    let mut result = ModuleResult::default();
    if content_changed {
        if ctx.diff {
            let before = existing
                .as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default()
                .into_owned();
            result.diff = Some((
                dest.display().to_string(),
                before,
                String::from_utf8_lossy(how.bytes).into_owned(),
            ));
        }
        if !ctx.check {
            if let Some(parent) = dest.parent() {
                if !fs.exists(parent)? {
                    return Err(ModuleError::new(format!(
                        "the folder {} does not exist; create it first (file: state=directory)",
                        parent.display()
                    )));
                }
            }
            if let Some(validate) = how.validate {
                run_validate(ctx, validate, how.bytes)?;
            }
            let mode = match how.mode {
                Some(Mode::Octal(bits)) => Some(*bits),
                _ => None,
            };
            if how.backup && existing.is_some() {
                let name = super::pathinfo::backup(fs, dest)?;
                result.fields.insert("backup_file".into(), Json::from(name));
            }
            fs.write_atomic(dest, how.bytes, mode)?;
        }
    }
    let attrs_changed = if ctx.check && existing.is_none() {
        false
    } else {
        attrs::apply(fs, dest, how.owner, how.group, how.mode, ctx.check)?
    };
    result.changed = content_changed || attrs_changed;
    result
        .fields
        .insert("dest".into(), Json::String(dest.display().to_string()));
    // Ansible's copy reports the digests of what it placed (template's too, through copy).
    use sha1::Digest;
    let checksum = format!("{:x}", sha1::Sha1::digest(how.bytes));
    let md5sum = format!("{:x}", md5::Md5::digest(how.bytes));
    result
        .fields
        .insert("checksum".into(), Json::from(checksum));
    result.fields.insert("md5sum".into(), Json::from(md5sum));
    Ok(result)
}

/// Runs the task's `validate` command (`%s` is the file) on `bytes` written to a scratch
/// file; fails when the command does.
fn run_validate(ctx: &ModuleCtx, validate: &str, bytes: &[u8]) -> Result<(), ModuleError> {
    let fs = ctx.target.fs();
    let probe = format!("/tmp/.imgbuild-validate-{}", std::process::id());
    fs.write_atomic(Path::new(&probe), bytes, Some(0o600))?;
    let out = ctx.target.run(&Cmd::shell(&validate.replace("%s", &probe)));
    fs.remove_all(Path::new(&probe))?;
    let out = out?;
    if out.rc != 0 {
        return Err(ModuleError::new(format!(
            "validation '{validate}' failed: {}",
            out.stderr.trim()
        )));
    }
    Ok(())
}

/// `mode: preserve`: the source file's own mode, the role file's, or the image file's with
/// `remote_src`.
fn preserved_mode(p: &CopyParams, ctx: &ModuleCtx) -> Result<Option<u32>, ModuleError> {
    let local = ctx
        .local_path()
        .ok()
        .filter(|_| !flag(&p.remote_src, false));
    Ok(match (local, &p.src) {
        (Some(local), _) => std::fs::metadata(&local)
            .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777)
            .ok(),
        (None, Some(src)) => ctx
            .target
            .fs()
            .meta_follow(Path::new(src.as_str()))?
            .map(|m| m.mode),
        (None, None) => None,
    })
}

fn copy_tree(ctx: &ModuleCtx, from: &Path, to: &Path, p: &CopyParams) -> Result<bool, ModuleError> {
    let fs = ctx.target.fs();
    let mut changed = false;
    if !fs.exists(to)? {
        changed = true;
        if !ctx.check {
            let dir_mode = match &p.directory_mode {
                Some(Mode::Octal(bits)) => *bits,
                _ => 0o755,
            };
            fs.mkdir_all(to, dir_mode)?;
        }
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(from)
        .map_err(|e| ModuleError::new(format!("{}: {e}", from.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for entry in entries {
        let Some(name) = entry.file_name() else {
            continue;
        };
        let dest = to.join(name);
        if entry.is_dir() {
            changed |= copy_tree(ctx, &entry, &dest, p)?;
        } else {
            let bytes = std::fs::read(&entry)
                .map_err(|e| ModuleError::new(format!("{}: {e}", entry.display())))?;
            let (bytes, _) = open_vaulted(bytes, &entry)?;
            let how = Placement {
                bytes: &bytes,
                mode: &p.mode,
                owner: &p.owner,
                group: &p.group,
                force: flag(&p.force, true),
                validate: None,
                backup: flag(&p.backup, false),
            };
            changed |= place(ctx, &dest, &how)?.changed;
        }
    }
    Ok(changed)
}

/// `copy`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let mut p: CopyParams = params(SPEC.name, args)?;
    let fs = ctx.target.fs();
    if matches!(&p.mode, Some(Mode::Symbolic(m)) if m == "preserve") {
        p.mode = preserved_mode(&p, ctx)?.map(Mode::Octal);
    }
    let mut dest = PathBuf::from(p.dest.as_str());
    let force = flag(&p.force, true);
    let mut vaulted = false;
    let bytes: Vec<u8> = if let Some(content) = &p.content {
        content.as_str().as_bytes().to_vec()
    } else if flag(&p.remote_src, false)
        || p.src.as_ref().is_some_and(|s| s.as_str().starts_with('/'))
    {
        let src = p.src.as_ref().map(|s| s.to_string()).unwrap_or_default();
        ctx.source_fs(Path::new(&src), flag(&p.remote_src, false))?
            .read(Path::new(&src))?
    } else {
        let local = ctx.local_path()?;
        let src_text = p.src.as_ref().map(|s| s.to_string()).unwrap_or_default();
        if local.is_dir() {
            let target = if src_text.ends_with('/') {
                dest.clone()
            } else {
                dest.join(local.file_name().unwrap_or_default())
            };
            let changed = copy_tree(ctx, &local, &target, &p)?;
            return Ok(ModuleResult::changed(changed).with("dest", target.display().to_string()));
        }
        let bytes = std::fs::read(&local)
            .map_err(|e| ModuleError::new(format!("{}: {e}", local.display())))?;
        let (bytes, was_vaulted) = open_vaulted(bytes, &local)?;
        vaulted = was_vaulted;
        bytes
    };
    if flag(&p.follow, false) && fs.meta(&dest)?.is_some_and(|m| m.kind == Kind::Symlink) {
        // follow: yes writes what the link points at; without it the link is replaced.
        dest = fs.resolve(&dest)?;
    }
    let dest_is_dir = p.dest.as_str().ends_with('/')
        || fs.meta_follow(&dest)?.is_some_and(|m| m.kind == Kind::Dir);
    if p.dest.as_str().ends_with('/') && !ctx.check {
        // A dest ending in '/' is a folder that Ansible makes, parents and all, with
        // directory_mode and the task's owner and group.
        attrs::make_folders(fs, &dest, &p.owner, &p.group, &p.directory_mode)?;
    }
    if dest_is_dir {
        let name = p
            .src
            .as_ref()
            .and_then(|s| Path::new(s.as_str()).file_name().map(|n| n.to_os_string()));
        match name {
            Some(name) => dest = dest.join(name),
            None => {
                return Err(ModuleError::new(format!(
                    "dest {} is a folder; content needs a file name",
                    p.dest
                )))
            }
        }
    }
    let how = Placement {
        bytes: &bytes,
        mode: &p.mode,
        owner: &p.owner,
        group: &p.group,
        force,
        validate: p.validate.as_ref().map(Text::as_str),
        backup: flag(&p.backup, false),
    };
    let mut result = place(ctx, &dest, &how)?;
    if vaulted {
        // A vaulted source's clear text is never shown, not even in --diff.
        result.diff = None;
    }
    Ok(result)
}

/// A role file's bytes, decrypted if it is vaulted, as Ansible's `copy` does by default; and
/// whether it was.
fn open_vaulted(bytes: Vec<u8>, path: &Path) -> Result<(Vec<u8>, bool), ModuleError> {
    ansible::vault::process_vault()
        .open_file(bytes)
        .map_err(|e| ModuleError::new(format!("{}: vault-encrypted file: {e}", path.display())))
}
