//! Owner, group and mode of files, with names looked up in the rootfs's passwd and group.

use std::path::Path;

use crate::types::{Mode, Text};

use super::api::ModuleError;
use super::symbolic_mode;
use crate::rootfs::RootFs;

/// Looks a name (or a number) up in the rootfs's `/etc/passwd` or `/etc/group`.
pub fn lookup_id(fs: &RootFs, file: &str, name: &str) -> Result<u32, ModuleError> {
    if let Ok(id) = name.parse::<u32>() {
        return Ok(id);
    }
    let text = fs.read_text_opt(Path::new(file))?.unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split(':');
            let entry = fields.next()?;
            let id = fields.nth(1)?.parse::<u32>().ok()?;
            (entry == name).then_some(id)
        })
        .next()
        .ok_or_else(|| {
            let what = if file.ends_with("passwd") { "user" } else { "group" };
            ModuleError::new(format!("{what} '{name}' does not exist in the image ({file}); create it first (the {what} module) or use a number"))
        })
}

/// What a module that writes a text file asks for besides its content.
#[derive(Debug, Clone, Copy)]
pub struct FileAttrs<'a> {
    /// Mode of the file.
    pub mode: &'a Option<Mode>,
    /// Owner name or uid.
    pub owner: &'a Option<Text>,
    /// Group name or gid.
    pub group: &'a Option<Text>,
    /// Keep a timestamped copy of the file before changing it (`backup: yes`).
    pub backup: bool,
}

impl<'a> FileAttrs<'a> {
    /// What a task's `mode`, `owner`, `group` and `backup` ask for.
    pub fn new(
        mode: &'a Option<Mode>,
        owner: &'a Option<Text>,
        group: &'a Option<Text>,
        backup: &Option<crate::types::Flag>,
    ) -> Self {
        Self {
            mode,
            owner,
            group,
            backup: super::api::flag(backup, false),
        }
    }
}

impl FileAttrs<'static> {
    /// No mode, owner or group asked for, no backup.
    pub const NONE: FileAttrs<'static> = FileAttrs {
        mode: &None,
        owner: &None,
        group: &None,
        backup: false,
    };
}

/// Makes `path` and its missing parents as Ansible's `file` and `copy` do: each folder made gets
/// the owner, group and mode asked for, not only the last (default mode 0755). What the
/// attributes changed, the later folders' over the earlier's.
pub fn make_folders(
    fs: &RootFs,
    path: &Path,
    owner: &Option<Text>,
    group: &Option<Text>,
    mode: &Option<Mode>,
) -> Result<AttrChanges, ModuleError> {
    let mut missing = Vec::new();
    for dir in path.ancestors() {
        if fs.meta_follow(dir)?.is_some() {
            break;
        }
        missing.push(dir);
    }
    let mut changes = AttrChanges::default();
    for dir in missing.into_iter().rev() {
        fs.mkdir_all(dir, 0o755)?;
        changes = changes.then(apply_changes(fs, dir, owner, group, mode, false)?);
    }
    Ok(changes)
}

/// What applying owner, group and mode changed: each as (before, after).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct AttrChanges {
    /// Owner's uid.
    pub uid: Option<(u32, u32)>,
    /// Group's gid.
    pub gid: Option<(u32, u32)>,
    /// Permission bits.
    pub mode: Option<(u32, u32)>,
}

impl AttrChanges {
    /// Whether anything changed.
    pub fn any(&self) -> bool {
        self.uid.is_some() || self.gid.is_some() || self.mode.is_some()
    }

    /// These changes, each overridden by a later one's where that one changed it.
    pub fn then(self, later: AttrChanges) -> AttrChanges {
        AttrChanges {
            uid: later.uid.or(self.uid),
            gid: later.gid.or(self.gid),
            mode: later.mode.or(self.mode),
        }
    }
}

/// Sets owner, group and mode of `path` where asked; `true` if anything changed.
pub fn apply(
    fs: &RootFs,
    path: &Path,
    owner: &Option<Text>,
    group: &Option<Text>,
    mode: &Option<Mode>,
    check: bool,
) -> Result<bool, ModuleError> {
    Ok(apply_changes(fs, path, owner, group, mode, check)?.any())
}

/// The mode `mode` asks for, of a path whose mode and kind are `meta`'s.
fn wanted_mode(mode: &Mode, meta: &crate::rootfs::Meta) -> Result<u32, ModuleError> {
    Ok(match mode {
        Mode::Octal(bits) => *bits,
        Mode::Symbolic(s) if s == "preserve" => meta.mode,
        Mode::Symbolic(s) => {
            symbolic_mode::apply(s, meta.mode, meta.kind == crate::rootfs::Kind::Dir)?
        }
        Mode::Deferred(t) => return Err(ModuleError::new(format!("mode '{t}' was not resolved"))),
    })
}

/// Sets owner, group and mode of `path` where asked (owner and group first, as Ansible does);
/// what changed.
pub fn apply_changes(
    fs: &RootFs,
    path: &Path,
    owner: &Option<Text>,
    group: &Option<Text>,
    mode: &Option<Mode>,
    check: bool,
) -> Result<AttrChanges, ModuleError> {
    let Some(meta) = fs.meta(path)? else {
        return Ok(AttrChanges::default());
    };
    let mut changes = AttrChanges::default();
    let uid = owner
        .as_ref()
        .map(|o| lookup_id(fs, "/etc/passwd", o.as_str()))
        .transpose()?
        .filter(|u| *u != meta.uid);
    let gid = group
        .as_ref()
        .map(|g| lookup_id(fs, "/etc/group", g.as_str()))
        .transpose()?
        .filter(|g| *g != meta.gid);
    changes.uid = uid.map(|u| (meta.uid, u));
    changes.gid = gid.map(|g| (meta.gid, g));
    if (uid.is_some() || gid.is_some()) && !check {
        fs.chown(path, uid, gid)?;
    }
    if meta.kind != crate::rootfs::Kind::Symlink {
        if let Some(mode) = mode {
            let wanted = wanted_mode(mode, &meta)?;
            if wanted != meta.mode {
                changes.mode = Some((meta.mode, wanted));
                if !check {
                    fs.chmod(path, wanted)?;
                }
            }
        }
    }
    Ok(changes)
}
