//! What verify reads of an image, gathered in one pass: every path with its type, size and link
//! target; the bytes of the few small files the rules read (module and modprobe configuration,
//! `ofed_info`, dpkg's status, possible private keys); and each kernel module's `.modinfo`. A rootfs folder is
//! walked; a Warewulf image or a container image's layers are streamed, never unpacked to disk.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use crate::modinfo::{is_module, read_module_from, Modinfo};

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A device, FIFO or socket.
    Other,
}

/// One path of the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its type.
    pub kind: Kind,
    /// Its size in bytes (files).
    pub size: u64,
    /// Where it points (symlinks).
    pub target: Option<String>,
}

/// The image as verify sees it. Paths are absolute (`/etc/fstab`), without a trailing slash.
#[derive(Debug, Default)]
pub struct Snapshot {
    entries: BTreeMap<String, Entry>,
    contents: BTreeMap<String, Vec<u8>>,
    modules: BTreeMap<String, Result<Modinfo, String>>,
    /// Paths added by the layer being applied (an opaque folder hides only older ones).
    this_layer: BTreeSet<String>,
}

/// Files larger than this are never kept whole, whatever their name.
const KEEP_LIMIT: u64 = 4 << 20;

/// Whether the rules read this file's bytes.
fn keeps_content(path: &str, size: u64) -> bool {
    if size > KEEP_LIMIT {
        return false;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    let in_config = |folder: &str| {
        ["/etc/", "/run/", "/lib/", "/usr/lib/", "/usr/local/lib/"]
            .iter()
            .any(|base| path.starts_with(&format!("{base}{folder}/")))
    };
    let under_modules = path.starts_with("/lib/modules/") || path.starts_with("/usr/lib/modules/");
    // Configuration files anywhere under /etc and the library folders: a modprobe.d entry may
    // be a link to one elsewhere (Debian's alternatives), and a stream cannot go back for it.
    let config_elsewhere = name.ends_with(".conf")
        && size <= 256 << 10
        && ["/etc/", "/lib/", "/usr/lib/"]
            .iter()
            .any(|base| path.starts_with(base));
    (under_modules && name.starts_with("modules.") && !name.ends_with(".bin"))
        || config_elsewhere
        || in_config("modprobe.d")
        || in_config("depmod.d")
        || path == "/etc/infiniband/openib.conf"
        || name == "ofed_info"
        // doca_version reads the installed doca-ofed's version.
        || path == "/var/lib/dpkg/status"
        || crate::key_paths::may_be_a_key(path)
}

fn is_module_path(path: &str) -> bool {
    (path.starts_with("/lib/modules/") || path.starts_with("/usr/lib/modules/")) && is_module(path)
}

/// `/a/./b/../c` → `/a/c`, always absolute.
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

impl Snapshot {
    /// Walks the rootfs folder `root`.
    pub fn from_dir(root: &Path) -> std::io::Result<Snapshot> {
        let mut snapshot = Snapshot::default();
        snapshot.walk(root, "")?;
        Ok(snapshot)
    }

    fn walk(&mut self, root: &Path, rel: &str) -> std::io::Result<()> {
        let dir = root.join(rel.trim_start_matches('/'));
        let mut names: Vec<_> = std::fs::read_dir(&dir)?
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        names.sort();
        for name in names {
            let path = format!("{rel}/{}", name.to_string_lossy());
            let host = dir.join(&name);
            let Ok(meta) = std::fs::symlink_metadata(&host) else {
                continue;
            };
            let file_type = meta.file_type();
            if file_type.is_dir() {
                self.insert(&path, Kind::Dir, 0, None);
                self.walk(root, &path)?;
            } else if file_type.is_symlink() {
                let target = std::fs::read_link(&host)?.to_string_lossy().into_owned();
                self.insert(&path, Kind::Symlink, 0, Some(target));
            } else if file_type.is_file() {
                let wanted = is_module_path(&path) || keeps_content(&path, meta.len());
                let file = if wanted {
                    Some(std::fs::File::open(&host)?)
                } else {
                    None
                };
                self.add_file(&path, meta.len(), file)?;
            } else {
                self.insert(&path, Kind::Other, 0, None);
            }
        }
        Ok(())
    }

    fn insert(&mut self, path: &str, kind: Kind, size: u64, target: Option<String>) {
        let path = normalize(path);
        if kind != Kind::Dir {
            self.remove(&path);
        }
        // Archives may leave out a file's folders; they exist all the same.
        let mut parent = path.as_str();
        while let Some((up, _)) = parent.rsplit_once('/') {
            if up.is_empty() || self.entries.contains_key(up) {
                break;
            }
            self.entries.insert(
                up.to_owned(),
                Entry {
                    kind: Kind::Dir,
                    size: 0,
                    target: None,
                },
            );
            parent = up;
        }
        self.this_layer.insert(path.clone());
        self.entries.insert(path, Entry { kind, size, target });
    }

    /// Adds a folder.
    pub fn add_dir(&mut self, path: &str) {
        self.insert(path, Kind::Dir, 0, None);
    }

    /// Adds a symbolic link.
    pub fn add_symlink(&mut self, path: &str, target: &str) {
        self.insert(path, Kind::Symlink, 0, Some(target.to_owned()));
    }

    /// Adds a device, FIFO or socket.
    pub fn add_other(&mut self, path: &str) {
        self.insert(path, Kind::Other, 0, None);
    }

    /// Adds a regular file of `size` bytes, reading from `content` what the rules need (its
    /// modinfo, or its bytes); `content` may be left unread.
    pub fn add_file(
        &mut self,
        path: &str,
        size: u64,
        content: Option<impl Read>,
    ) -> std::io::Result<()> {
        let path = normalize(path);
        self.insert(&path, Kind::File, size, None);
        let Some(mut content) = content else {
            return Ok(());
        };
        if is_module_path(&path) {
            let info = read_module_from(&path, content).map_err(|e| e.to_string());
            self.modules.insert(path, info);
        } else if keeps_content(&path, size) {
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            content.read_to_end(&mut bytes)?;
            self.contents.insert(path, bytes);
        }
        Ok(())
    }

    /// A second name for the file at `existing` (a hard link).
    pub fn add_hardlink(&mut self, path: &str, existing: &str) {
        let existing = normalize(existing);
        let Some(entry) = self.entries.get(&existing).cloned() else {
            return;
        };
        let path = normalize(path);
        self.insert(&path, entry.kind, entry.size, entry.target);
        if let Some(bytes) = self.contents.get(&existing).cloned() {
            self.contents.insert(path.clone(), bytes);
        }
        if let Some(info) = self.modules.get(&existing).cloned() {
            self.modules.insert(path, info);
        }
    }

    /// Removes a path and everything under it (an OCI whiteout).
    pub fn remove(&mut self, path: &str) {
        let path = normalize(path);
        let under = format!("{path}/");
        // Everything under `path/` sorts together; `path-x` may sort between it and `path`.
        let keys: Vec<String> = std::iter::once(path.clone())
            .chain(
                self.entries
                    .range(under.clone()..)
                    .map(|(k, _)| k.clone())
                    .take_while(|k| k.starts_with(&under)),
            )
            .collect();
        self.forget(keys);
    }

    /// Hides what older layers put in the folder `dir` (an OCI opaque whiteout).
    pub fn make_opaque(&mut self, dir: &str) {
        let under = format!("{}/", normalize(dir));
        let older: Vec<String> = self
            .entries
            .range(under.clone()..)
            .map(|(k, _)| k.clone())
            .take_while(|k| k.starts_with(&under))
            .filter(|k| !self.this_layer.contains(k))
            .collect();
        self.forget(older);
    }

    fn forget(&mut self, keys: Vec<String>) {
        for key in keys {
            self.entries.remove(&key);
            self.contents.remove(&key);
            self.modules.remove(&key);
        }
    }

    /// Starts the next layer (for opaque folders).
    pub fn next_layer(&mut self) {
        self.this_layer.clear();
    }

    /// `path` with every symlink inside the image followed (absolute targets against the
    /// image's root), or `None` when a component is missing or links loop.
    pub fn resolve(&self, path: &str) -> Option<String> {
        self.resolve_depth(path, 0)
    }

    fn resolve_depth(&self, path: &str, depth: usize) -> Option<String> {
        if depth > 32 {
            return None;
        }
        let normal = normalize(path);
        let parts: Vec<&str> = normal.split('/').filter(|p| !p.is_empty()).collect();
        let mut current = String::new();
        for (i, part) in parts.iter().enumerate() {
            let next = format!("{current}/{part}");
            let entry = self.entries.get(&next)?;
            if let (Kind::Symlink, Some(target)) = (entry.kind, &entry.target) {
                let base = if target.starts_with('/') {
                    String::new()
                } else {
                    current.clone()
                };
                let rest = parts[i + 1..].join("/");
                return self.resolve_depth(&format!("{base}/{target}/{rest}"), depth + 1);
            }
            current = next;
        }
        Some(if current.is_empty() {
            "/".to_owned()
        } else {
            current
        })
    }

    /// The entry at `path`, symlinks followed.
    pub fn entry(&self, path: &str) -> Option<&Entry> {
        let resolved = self.resolve(path)?;
        if resolved == "/" {
            return None;
        }
        self.entries.get(&resolved)
    }

    /// Whether `path` (followed) is a regular file.
    pub fn is_file(&self, path: &str) -> bool {
        self.entry(path).is_some_and(|e| e.kind == Kind::File)
    }

    /// The kept bytes of the file at `path` (followed).
    pub fn read(&self, path: &str) -> Option<&[u8]> {
        self.contents.get(&self.resolve(path)?).map(Vec::as_slice)
    }

    /// The kept text of the file at `path` (followed), lossily decoded.
    pub fn read_text(&self, path: &str) -> Option<String> {
        self.read(path)
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// The names in the folder `dir` (followed), sorted.
    pub fn list(&self, dir: &str) -> Vec<String> {
        let Some(resolved) = self.resolve(dir) else {
            return Vec::new();
        };
        let under = if resolved == "/" {
            "/".to_owned()
        } else {
            format!("{resolved}/")
        };
        self.entries
            .range(under.clone()..)
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(&under))
            .filter_map(|k| {
                let rest = &k[under.len()..];
                (!rest.contains('/')).then(|| rest.to_owned())
            })
            .collect()
    }

    /// Every entry below `dir` (followed), as paths relative to it.
    pub fn walk_under(&self, dir: &str) -> Vec<(String, &Entry)> {
        let Some(resolved) = self.resolve(dir) else {
            return Vec::new();
        };
        let under = format!("{}/", resolved.trim_end_matches('/'));
        self.entries
            .range(under.clone()..)
            .take_while(|(k, _)| k.starts_with(&under))
            .map(|(k, e)| (k[under.len()..].to_owned(), e))
            .collect()
    }

    /// Every entry of the image.
    pub fn entries(&self) -> impl Iterator<Item = (&String, &Entry)> {
        self.entries.iter()
    }

    /// The modinfo of the module file at `path` (followed).
    pub fn modinfo(&self, path: &str) -> Option<&Result<Modinfo, String>> {
        self.modules.get(&self.resolve(path)?)
    }

    /// The paths of kept files (for rules that scan them, such as the key rule).
    pub fn kept_files(&self) -> impl Iterator<Item = (&String, &Vec<u8>)> {
        self.contents.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_resolve_inside_the_image() {
        let mut s = Snapshot::default();
        s.add_dir("/usr");
        s.add_dir("/usr/lib");
        s.add_symlink("/lib", "usr/lib");
        s.add_dir("/usr/lib/modprobe.d");
        s.add_file("/usr/lib/modprobe.d/a.conf", 9, Some(&b"alias x y"[..]))
            .expect("add");
        s.add_symlink("/etc/abs", "/lib/modprobe.d/a.conf");
        assert_eq!(
            s.read_text("/lib/modprobe.d/a.conf").as_deref(),
            Some("alias x y")
        );
        assert_eq!(s.read_text("/etc/abs").as_deref(), Some("alias x y"));
        assert_eq!(s.list("/lib"), vec!["modprobe.d"]);
        s.add_symlink("/loop", "/loop");
        assert_eq!(s.resolve("/loop/x"), None);
    }

    #[test]
    fn whiteouts_remove_and_opaque_folders_hide_only_older_layers() {
        let mut s = Snapshot::default();
        s.add_dir("/d");
        s.add_file("/d/old", 1, None::<&[u8]>).expect("add");
        s.add_file("/gone/x", 1, None::<&[u8]>).expect("add");
        s.add_file("/gone-kept", 1, None::<&[u8]>).expect("add");
        s.next_layer();
        s.add_file("/d/new", 1, None::<&[u8]>).expect("add");
        s.make_opaque("/d");
        s.remove("/gone");
        assert_eq!(s.list("/d"), vec!["new"]);
        assert!(s.entry("/gone/x").is_none());
        assert!(s.entry("/gone-kept").is_some());
    }
}
