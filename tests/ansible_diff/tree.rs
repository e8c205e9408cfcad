//! The trees two runs leave, read from their overlayfs upper folders over one shared lower, and
//! compared path by path: type, mode, owner, group, link target, content digest, xattrs.
//!
//! Only paths that either run touched can differ: every path in either upper folder (whiteouts
//! are deletions), and everything under an opaque folder's lower twin (a folder removed and made
//! again hides what the lower had).

use std::collections::BTreeSet;
use std::fmt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

/// One run's tree: its overlay upper folder over the shared lower.
pub struct Layered<'a> {
    /// What the run wrote.
    pub upper: &'a Path,
    /// The rootfs both runs started from.
    pub lower: &'a Path,
}

/// What a path is, as the comparison sees it (times are not compared: they differ per run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    kind: &'static str,
    mode: u32,
    uid: u32,
    gid: u32,
    link: Option<PathBuf>,
    digest: Option<String>,
    rdev: u64,
    xattrs: Vec<(String, Vec<u8>)>,
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {:04o} {}:{}",
            self.kind, self.mode, self.uid, self.gid
        )?;
        if let Some(link) = &self.link {
            write!(f, " -> {}", link.display())?;
        }
        if let Some(digest) = &self.digest {
            write!(f, " sha256:{}", &digest[..16])?;
        }
        if self.rdev != 0 {
            write!(f, " rdev {}", self.rdev)?;
        }
        for (name, value) in &self.xattrs {
            write!(f, " {name}={}", String::from_utf8_lossy(value))?;
        }
        Ok(())
    }
}

fn is_whiteout(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_char_device() && meta.rdev() == 0
}

fn is_opaque(dir: &Path) -> bool {
    ["trusted.overlay.opaque", "user.overlay.opaque"]
        .iter()
        .any(|name| matches!(xattr::get(dir, name), Ok(Some(v)) if v == b"y"))
}

fn sha256_file(path: &Path) -> String {
    let mut hasher = Sha256::new();
    let mut file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    std::io::copy(&mut file, &mut hasher).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    format!("{:x}", hasher.finalize())
}

/// Reads what a path is (`None`: nothing there).
fn entry(path: &Path) -> Option<Entry> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let file_type = meta.file_type();
    let kind = if file_type.is_file() {
        "file"
    } else if file_type.is_dir() {
        "dir"
    } else if file_type.is_symlink() {
        "symlink"
    } else if file_type.is_char_device() {
        "chardev"
    } else if file_type.is_block_device() {
        "blockdev"
    } else if file_type.is_fifo() {
        "fifo"
    } else {
        "socket"
    };
    let mut xattrs: Vec<(String, Vec<u8>)> = xattr::list(path)
        .map(|names| {
            names
                .filter_map(|n| n.into_string().ok())
                .filter(|n| !n.contains(".overlay."))
                .filter_map(|n| xattr::get(path, &n).ok().flatten().map(|v| (n, v)))
                .collect()
        })
        .unwrap_or_default();
    xattrs.sort();
    Some(Entry {
        kind,
        mode: meta.mode() & 0o7777,
        uid: meta.uid(),
        gid: meta.gid(),
        link: file_type
            .is_symlink()
            .then(|| std::fs::read_link(path).unwrap_or_default()),
        digest: file_type.is_file().then(|| sha256_file(path)),
        rdev: if file_type.is_char_device() || file_type.is_block_device() {
            meta.rdev()
        } else {
            0
        },
        xattrs,
    })
}

impl Layered<'_> {
    /// What `rel` is in the merged tree, as overlayfs would show it, and where it is.
    pub fn resolve(&self, rel: &Path) -> Option<(Entry, PathBuf)> {
        let parts: Vec<Component> = rel.components().collect();
        let mut upper = self.upper.to_path_buf();
        let mut lower_hidden = false;
        for (i, part) in parts.iter().enumerate() {
            upper.push(part);
            let last = i + 1 == parts.len();
            match std::fs::symlink_metadata(&upper) {
                Ok(meta) if is_whiteout(&meta) => return None,
                Ok(_) if last => return entry(&upper).map(|e| (e, upper)),
                Ok(meta) if !meta.is_dir() => return None,
                Ok(_) => lower_hidden |= is_opaque(&upper),
                Err(_) => break,
            }
        }
        if lower_hidden {
            return None;
        }
        // Below the upper's reach the lower shows through, if every folder on the way is a
        // real folder there (never follow a link out of the tree).
        let mut lower = self.lower.to_path_buf();
        for (i, part) in parts.iter().enumerate() {
            lower.push(part);
            if i + 1 < parts.len() && !std::fs::symlink_metadata(&lower).is_ok_and(|m| m.is_dir()) {
                return None;
            }
        }
        entry(&lower).map(|e| (e, lower))
    }

    /// Every path this run may have changed, relative to the root.
    pub fn touched(&self, into: &mut BTreeSet<PathBuf>) {
        walk(self.upper, Path::new(""), &mut |rel, path, meta| {
            into.insert(rel.to_path_buf());
            if meta.is_dir() && is_opaque(path) {
                let below = self.lower.join(rel);
                if std::fs::symlink_metadata(&below).is_ok_and(|m| m.is_dir()) {
                    walk(&below, rel, &mut |hidden, _, _| {
                        into.insert(hidden.to_path_buf());
                    });
                }
            }
        });
    }
}

/// Calls `visit(relative, absolute, metadata)` for everything below `dir` (links not followed).
fn walk(dir: &Path, rel: &Path, visit: &mut dyn FnMut(&Path, &Path, &std::fs::Metadata)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for item in entries.flatten() {
        let path = item.path();
        let rel = rel.join(item.file_name());
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        visit(&rel, &path, &meta);
        if meta.is_dir() {
            walk(&path, &rel, visit);
        }
    }
}

/// One path that the two runs left differently.
pub struct Difference {
    /// The path, absolute in the image.
    pub path: String,
    /// What Ansible left.
    pub ansible: Option<Entry>,
    /// What imgbuild left.
    pub imgbuild: Option<Entry>,
    /// The lines only one side has, for text files that differ (`-` Ansible's, `+` imgbuild's).
    pub lines: Vec<String>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |e: &Option<Entry>| e.as_ref().map_or("absent".to_owned(), |e| e.to_string());
        write!(
            f,
            "{}\n      ansible-playbook: {}\n      imgbuild:         {}",
            self.path,
            show(&self.ansible),
            show(&self.imgbuild)
        )?;
        for line in &self.lines {
            write!(f, "\n        {line}")?;
        }
        Ok(())
    }
}

/// The lines only one of two small text files has, in order, at most 40.
fn line_changes(ansible: &Path, imgbuild: &Path) -> Vec<String> {
    let read = |p: &Path| {
        std::fs::read(p)
            .ok()
            .filter(|b| b.len() < 65536)
            .and_then(|b| String::from_utf8(b).ok())
    };
    let (Some(a), Some(b)) = (read(ansible), read(imgbuild)) else {
        return Vec::new();
    };
    let (a_lines, b_lines): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let mut out: Vec<String> = a_lines
        .iter()
        .filter(|l| !b_lines.contains(l))
        .map(|l| format!("- {l:?}"))
        .chain(
            b_lines
                .iter()
                .filter(|l| !a_lines.contains(l))
                .map(|l| format!("+ {l:?}")),
        )
        .take(40)
        .collect();
    if out.is_empty() {
        out.push(format!(
            "(same lines; {} and {} bytes, line ends or order differ)",
            a.len(),
            b.len()
        ));
    }
    out
}

/// Every path the two runs left differently, except those `ignored` says change on every run.
pub fn compare(
    ansible: &Layered,
    imgbuild: &Layered,
    ignored: impl Fn(&str) -> bool,
) -> Vec<Difference> {
    let mut touched = BTreeSet::new();
    ansible.touched(&mut touched);
    imgbuild.touched(&mut touched);
    touched
        .iter()
        .filter_map(|rel| {
            let path = format!("/{}", rel.display());
            if ignored(&path) {
                return None;
            }
            let (a, b) = (ansible.resolve(rel), imgbuild.resolve(rel));
            let lines = match (&a, &b) {
                (Some((ea, pa)), Some((eb, pb))) if ea.kind == "file" && eb.kind == "file" => {
                    if ea.digest != eb.digest {
                        line_changes(pa, pb)
                    } else {
                        Vec::new()
                    }
                }
                _ => Vec::new(),
            };
            let (a, b) = (a.map(|x| x.0), b.map(|x| x.0));
            (a != b).then_some(Difference {
                path,
                ansible: a,
                imgbuild: b,
                lines,
            })
        })
        .collect()
}
