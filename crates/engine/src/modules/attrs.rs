//! Owner, group and mode of files, with names looked up in the rootfs's passwd and group.

use std::path::Path;

use planner::modules::types::{Mode, Text};

use super::ModuleError;
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

/// Applies a symbolic mode (`u+x,go-w`, `a=r`) to `current`.
pub fn symbolic(mode: &str, current: u32, is_dir: bool) -> Result<u32, ModuleError> {
    let mut bits = current;
    for clause in mode.split(',') {
        let ops_at = clause
            .find(['+', '-', '='])
            .ok_or_else(|| ModuleError::new(format!("bad symbolic mode '{mode}'")))?;
        let (who, rest) = clause.split_at(ops_at);
        let who_mask = if who.is_empty() || who.contains('a') {
            0o7777
        } else {
            who.chars().fold(0, |m, c| {
                m | match c {
                    'u' => 0o4700,
                    'g' => 0o2070,
                    'o' => 0o1007,
                    _ => 0,
                }
            })
        };
        let op = rest.chars().next().unwrap_or('=');
        let mut perm = 0;
        for c in rest[1..].chars() {
            perm |= match c {
                'r' => 0o444,
                'w' => 0o222,
                'x' => 0o111,
                'X' if is_dir || current & 0o111 != 0 => 0o111,
                'X' => 0,
                's' => 0o6000,
                't' => 0o1000,
                _ => return Err(ModuleError::new(format!("bad symbolic mode '{mode}'"))),
            };
        }
        let perm = perm & who_mask;
        bits = match op {
            '+' => bits | perm,
            '-' => bits & !perm,
            _ => (bits & !who_mask) | perm,
        };
    }
    Ok(bits & 0o7777)
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
        backup: &Option<planner::modules::types::Flag>,
    ) -> Self {
        Self {
            mode,
            owner,
            group,
            backup: super::flag(backup, false),
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
/// the owner, group and mode asked for, not only the last (default mode 0755).
pub fn make_folders(
    fs: &RootFs,
    path: &Path,
    owner: &Option<Text>,
    group: &Option<Text>,
    mode: &Option<Mode>,
) -> Result<(), ModuleError> {
    let mut missing = Vec::new();
    for dir in path.ancestors() {
        if fs.meta_follow(dir)?.is_some() {
            break;
        }
        missing.push(dir);
    }
    for dir in missing.into_iter().rev() {
        fs.mkdir_all(dir, 0o755)?;
        apply(fs, dir, owner, group, mode, false)?;
    }
    Ok(())
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
    let Some(meta) = fs.meta(path)? else {
        return Ok(false);
    };
    let mut changed = false;
    if meta.kind != crate::rootfs::Kind::Symlink {
        if let Some(mode) = mode {
            let wanted = match mode {
                Mode::Octal(bits) => *bits,
                Mode::Symbolic(s) if s == "preserve" => meta.mode,
                Mode::Symbolic(s) => symbolic(s, meta.mode, meta.kind == crate::rootfs::Kind::Dir)?,
                Mode::Deferred(t) => {
                    return Err(ModuleError::new(format!("mode '{t}' was not resolved")))
                }
            };
            if wanted != meta.mode {
                changed = true;
                if !check {
                    fs.chmod(path, wanted)?;
                }
            }
        }
    }
    let uid = owner
        .as_ref()
        .map(|o| lookup_id(fs, "/etc/passwd", o.as_str()))
        .transpose()?;
    let gid = group
        .as_ref()
        .map(|g| lookup_id(fs, "/etc/group", g.as_str()))
        .transpose()?;
    let uid = uid.filter(|u| *u != meta.uid);
    let gid = gid.filter(|g| *g != meta.gid);
    if uid.is_some() || gid.is_some() {
        changed = true;
        if !check {
            fs.chown(path, uid, gid)?;
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbolic_modes() {
        assert_eq!(symbolic("u+x", 0o644, false).expect("mode"), 0o744);
        assert_eq!(symbolic("go-w", 0o666, false).expect("mode"), 0o644);
        assert_eq!(symbolic("a=r", 0o777, false).expect("mode"), 0o444);
        assert_eq!(
            symbolic("u=rwx,g=rx,o=", 0o000, false).expect("mode"),
            0o750
        );
        assert_eq!(symbolic("a+X", 0o644, true).expect("mode"), 0o755);
        assert!(symbolic("u*x", 0o644, false).is_err());
    }
}
