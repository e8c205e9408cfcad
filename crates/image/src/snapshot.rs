//! The fallback where overlayfs cannot be mounted (some container hosts, some filesystems): the
//! role runs in a plain copy of the stack, and its changes are found by comparing the tree with
//! a snapshot taken before. They are written as an overlay-form upper folder (deleted paths as
//! 0/0 character devices, replaced folders marked opaque), so that the layer writer and the
//! cache see exactly what an overlay would have given them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What is compared: a change of content or metadata changes ctime, which no program can set
/// back, and a replaced file has a new inode.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stat {
    ino: u64,
    ctime: (i64, i64),
    mtime: (i64, i64),
    size: u64,
    mode: u32,
    uid: u32,
    gid: u32,
    rdev: u64,
}

impl Stat {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            ino: meta.ino(),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            size: meta.len(),
            mode: meta.mode(),
            uid: meta.uid(),
            gid: meta.gid(),
            rdev: meta.rdev(),
        }
    }

    fn kind(&self) -> u32 {
        self.mode & 0o170000
    }
}

/// Every path below a root with its metadata.
#[derive(Debug, Default)]
pub struct Snapshot {
    entries: BTreeMap<PathBuf, Stat>,
}

fn walk(root: &Path, rel: &Path, out: &mut BTreeMap<PathBuf, Stat>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(root.join(rel))? {
        let entry = entry?;
        let rel_path = rel.join(entry.file_name());
        let meta = std::fs::symlink_metadata(root.join(&rel_path))?;
        out.insert(rel_path.clone(), Stat::of(&meta));
        if meta.is_dir() {
            walk(root, &rel_path, out)?;
        }
    }
    Ok(())
}

/// What changed between two snapshots.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// New or modified paths (folders whose own metadata changed included), sorted.
    pub changed: Vec<PathBuf>,
    /// Deleted paths, top-most only.
    pub deleted: Vec<PathBuf>,
    /// Folders that were replaced (deleted and made again): their old content is hidden.
    pub opaque: Vec<PathBuf>,
}

impl Snapshot {
    /// Records every path below `root`.
    pub fn take(root: &Path) -> std::io::Result<Self> {
        let mut entries = BTreeMap::new();
        walk(root, Path::new(""), &mut entries)?;
        Ok(Self { entries })
    }

    /// What differs in `now` from this snapshot.
    fn changes(&self, now: &Snapshot) -> Changes {
        let mut changes = Changes::default();
        // Paths whose old content must not show through: replaced or retyped.
        let mut replaced: BTreeSet<&Path> = BTreeSet::new();
        for (path, stat) in &now.entries {
            match self.entries.get(path) {
                None => changes.changed.push(path.clone()),
                Some(old) if old != stat => {
                    changes.changed.push(path.clone());
                    if old.kind() != stat.kind() || old.ino != stat.ino {
                        replaced.insert(path);
                        if stat.kind() == 0o040000 && old.kind() == 0o040000 {
                            changes.opaque.push(path.clone());
                        }
                    }
                }
                Some(_) => {}
            }
        }
        let hidden = |path: &Path, deleted: &[PathBuf]| {
            path.ancestors()
                .skip(1)
                .any(|a| replaced.contains(a) || deleted.iter().any(|d| d == a))
        };
        for path in self.entries.keys() {
            if !now.entries.contains_key(path) && !hidden(path, &changes.deleted) {
                changes.deleted.push(path.clone());
            }
        }
        changes
    }

    /// Writes what changed below `root` since this snapshot into `upper`, in overlay form.
    pub fn diff_into(&self, root: &Path, upper: &Path) -> std::io::Result<Changes> {
        let now = Snapshot::take(root)?;
        let changes = self.changes(&now);
        let mut writer = UpperWriter {
            root,
            upper,
            links: HashMap::new(),
        };
        for path in &changes.changed {
            writer.parents(path)?;
            writer.copy(path)?;
        }
        for path in &changes.opaque {
            rustix::fs::lsetxattr(
                upper.join(path).as_path(),
                oci_layout::opaque_xattr(),
                b"y",
                rustix::fs::XattrFlags::empty(),
            )?;
        }
        for path in &changes.deleted {
            writer.parents(path)?;
            rustix::fs::mknodat(
                rustix::fs::CWD,
                upper.join(path).as_path(),
                rustix::fs::FileType::CharacterDevice,
                rustix::fs::Mode::empty(),
                0,
            )?;
        }
        Ok(changes)
    }
}

/// Copies entries of the tree into the upper folder with their metadata.
struct UpperWriter<'a> {
    root: &'a Path,
    upper: &'a Path,
    /// Inode → first copied path, to keep hard links among copied files.
    links: HashMap<u64, PathBuf>,
}

impl UpperWriter<'_> {
    /// Makes the parent folders of `path` in the upper folder (with the tree's metadata), as
    /// overlayfs copies them up.
    fn parents(&mut self, path: &Path) -> std::io::Result<()> {
        let mut missing: Vec<&Path> = path
            .ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty() && !self.upper.join(a).exists())
            .collect();
        missing.reverse();
        for dir in missing {
            self.copy(dir)?;
        }
        Ok(())
    }

    fn copy(&mut self, path: &Path) -> std::io::Result<()> {
        let from = self.root.join(path);
        let to = self.upper.join(path);
        let meta = std::fs::symlink_metadata(&from)?;
        let kind = meta.file_type();
        if kind.is_dir() {
            if !to.is_dir() {
                std::fs::create_dir(&to)?;
            }
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&from)?, &to)?;
        } else if kind.is_file() {
            match self.links.get(&meta.ino()).filter(|_| meta.nlink() > 1) {
                Some(first) => {
                    std::fs::hard_link(first, &to)?;
                    return Ok(());
                }
                None => {
                    std::fs::copy(&from, &to)?;
                    self.links.insert(meta.ino(), to.clone());
                }
            }
        } else if kind.is_char_device() || kind.is_block_device() || kind.is_fifo() {
            let file_type = if kind.is_char_device() {
                rustix::fs::FileType::CharacterDevice
            } else if kind.is_block_device() {
                rustix::fs::FileType::BlockDevice
            } else {
                rustix::fs::FileType::Fifo
            };
            rustix::fs::mknodat(
                rustix::fs::CWD,
                to.as_path(),
                file_type,
                rustix::fs::Mode::from_raw_mode(meta.mode() & 0o7777),
                meta.rdev(),
            )?;
        } else {
            return Ok(()); // Sockets are not kept.
        }
        rustix::fs::chownat(
            rustix::fs::CWD,
            to.as_path(),
            Some(rustix::fs::Uid::from_raw(meta.uid())),
            Some(rustix::fs::Gid::from_raw(meta.gid())),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )?;
        if !kind.is_symlink() {
            // After chown, which clears setuid bits.
            std::fs::set_permissions(
                &to,
                std::os::unix::fs::PermissionsExt::from_mode(meta.mode() & 0o7777),
            )?;
        }
        // Last: chown drops security.capability.
        copy_xattrs(&from, &to)?;
        let time = |s: i64, ns: i64| rustix::fs::Timespec {
            tv_sec: s,
            tv_nsec: ns,
        };
        rustix::fs::utimensat(
            rustix::fs::CWD,
            to.as_path(),
            &rustix::fs::Timestamps {
                last_access: time(meta.mtime(), meta.mtime_nsec()),
                last_modification: time(meta.mtime(), meta.mtime_nsec()),
            },
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )?;
        Ok(())
    }
}

fn copy_xattrs(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut names = vec![0u8; 65536];
    let Ok(len) = rustix::fs::llistxattr(from, &mut names) else {
        return Ok(());
    };
    for name in names[..len].split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        if oci_layout::is_overlay_xattr(name) {
            continue;
        }
        let mut value = vec![0u8; 65536];
        let len = rustix::fs::lgetxattr(from, name, &mut value)?;
        rustix::fs::lsetxattr(to, name, &value[..len], rustix::fs::XattrFlags::empty())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(paths: &[PathBuf]) -> Vec<String> {
        paths.iter().map(|p| p.display().to_string()).collect()
    }

    #[test]
    fn finds_new_changed_deleted_and_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        for d in ["etc", "gone/deep", "swap", "keep"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        std::fs::write(root.join("etc/conf"), "old").expect("write");
        std::fs::write(root.join("gone/deep/file"), "x").expect("write");
        std::fs::write(root.join("swap/old"), "x").expect("write");
        std::fs::write(root.join("keep/same"), "x").expect("write");
        let before = Snapshot::take(&root).expect("snapshot");

        std::fs::write(root.join("etc/conf"), "new").expect("write");
        std::fs::write(root.join("etc/added"), "a").expect("write");
        std::fs::remove_dir_all(root.join("gone")).expect("rm");
        // The new folder is made while the old one still exists, so it cannot be given the
        // old one's inode number (ext4 hands a freed number out again at once).
        std::fs::create_dir(root.join("swap.new")).expect("mkdir");
        std::fs::write(root.join("swap.new/new"), "n").expect("write");
        std::fs::remove_dir_all(root.join("swap")).expect("rm");
        std::fs::rename(root.join("swap.new"), root.join("swap")).expect("rename");
        std::fs::hard_link(root.join("etc/added"), root.join("etc/added-link")).expect("link");

        let upper = dir.path().join("upper");
        std::fs::create_dir(&upper).expect("mkdir");
        let changes = before.diff_into(&root, &upper).expect("diff");
        assert_eq!(
            names(&changes.changed),
            [
                "etc",
                "etc/added",
                "etc/added-link",
                "etc/conf",
                "swap",
                "swap/new"
            ]
        );
        assert_eq!(names(&changes.deleted), ["gone"], "only the top-most");
        assert_eq!(names(&changes.opaque), ["swap"]);
        assert_eq!(
            std::fs::read_to_string(upper.join("etc/conf")).expect("read"),
            "new"
        );
        assert!(
            !upper.join("keep").exists(),
            "unchanged folders are not copied"
        );
        let gone = std::fs::symlink_metadata(upper.join("gone")).expect("whiteout");
        assert!(gone.file_type().is_char_device() && gone.rdev() == 0);
        let added = std::fs::metadata(upper.join("etc/added")).expect("added");
        assert_eq!(added.nlink(), 2, "the hard link is kept");
    }
}
