//! What verify reads of an image, gathered in one pass: every path with its type, size and link
//! target; the bytes of the few small files the rules read (module and modprobe configuration,
//! `ofed_info`, dpkg's status, possible private keys); and each kernel module's `.modinfo`. A rootfs folder is
//! walked; a Warewulf image or a container image's layers are streamed, never unpacked to disk.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use oci_layout::OverlayEntry;
use sha2::{Digest, Sha256};

use crate::modinfo::{is_module, read_module_from, Modinfo};

/// Reads through to `inner`, hashing what passes when asked.
struct HashingReader<R> {
    inner: R,
    hasher: Option<Sha256>,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(hasher) = &mut self.hasher {
            hasher.update(&buf[..n]);
        }
        Ok(n)
    }
}

impl<R: Read> HashingReader<R> {
    /// Reads what is left (a decoder may stop before the end) and gives the hex digest.
    fn finish(mut self) -> std::io::Result<Option<String>> {
        if self.hasher.is_none() {
            return Ok(None);
        }
        std::io::copy(&mut self, &mut std::io::sink())?;
        Ok(self
            .hasher
            .map(|h| h.finalize().iter().map(|b| format!("{b:02x}")).collect()))
    }
}

/// How a folder read into a snapshot marks what it hides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// A rootfs: nothing hidden.
    Plain,
    /// A layer in overlayfs form: whiteouts and opaque folders.
    Overlay,
}

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
    /// The sha256 (hex) of out-of-tree modules and firmware files, for the SBOM.
    digests: BTreeMap<String, String>,
    /// Paths added by the layer being applied (an opaque folder hides only older ones).
    this_layer: BTreeSet<String>,
}

/// Files larger than this are never kept whole, whatever their name.
const KEEP_LIMIT: u64 = 4 << 20;

/// The package databases the SBOM reads may be larger than other kept files (rpm's Berkeley DB
/// `Packages` of a full EL 8 image is a hundred megabytes or more).
const DATABASE_LIMIT: u64 = 256 << 20;

/// Whether the SBOM reads this file's bytes: dpkg's database and file lists, rpm's SQLite
/// database and its write-ahead log or its Berkeley DB `Packages`, `os-release`.
fn sbom_reads(path: &str) -> bool {
    path == "/var/lib/dpkg/status"
        || (path.starts_with("/var/lib/dpkg/info/") && path.ends_with(".list"))
        || ["/var/lib/rpm/", "/usr/lib/sysimage/rpm/"]
            .iter()
            .any(|dir| {
                path.strip_prefix(dir).is_some_and(|name| {
                    ["rpmdb.sqlite", "rpmdb.sqlite-wal", "Packages"].contains(&name)
                })
            })
        || path == "/etc/os-release"
        || path == "/usr/lib/os-release"
}

/// Whether the SBOM records this file's sha256: firmware, and modules outside the kernel's own
/// `kernel/` folder (`updates/`, `extra/`, DKMS's folders).
pub fn wants_digest(path: &str) -> bool {
    if path.starts_with("/lib/firmware/") || path.starts_with("/usr/lib/firmware/") {
        return true;
    }
    let rest = path
        .strip_prefix("/lib/modules/")
        .or_else(|| path.strip_prefix("/usr/lib/modules/"));
    match rest.and_then(|r| r.split_once('/')) {
        Some((_, rel)) => is_module(rel) && !rel.starts_with("kernel/"),
        None => false,
    }
}

/// Whether the rules read this file's bytes.
fn keeps_content(path: &str, size: u64) -> bool {
    if sbom_reads(path) && size <= DATABASE_LIMIT {
        return true;
    }
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
        snapshot.walk(root, "", Form::Plain)?;
        Ok(snapshot)
    }

    /// Reads an image from its layers' folders, bottom first, each in overlayfs form (as a
    /// build keeps them): whiteouts and opaque folders honoured, as [`Snapshot::from_dir`]
    /// would read the rootfs the layers make, without writing that rootfs.
    pub fn from_layer_dirs(layers: &[impl AsRef<Path>]) -> std::io::Result<Snapshot> {
        let mut snapshot = Snapshot::default();
        for layer in layers {
            snapshot.next_layer();
            snapshot.walk(layer.as_ref(), "", Form::Overlay)?;
        }
        Ok(snapshot)
    }

    fn walk(&mut self, root: &Path, rel: &str, form: Form) -> std::io::Result<()> {
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
            let overlay = match form {
                Form::Overlay => OverlayEntry::of(&host, &meta),
                Form::Plain => OverlayEntry::Plain,
            };
            match overlay {
                OverlayEntry::Whiteout => {
                    self.remove(&path);
                    continue;
                }
                OverlayEntry::OpaqueDir => self.make_opaque(&path),
                OverlayEntry::Plain => {}
            }
            let file_type = meta.file_type();
            if file_type.is_dir() {
                self.insert(&path, Kind::Dir, 0, None);
                self.walk(root, &path, form)?;
            } else if file_type.is_symlink() {
                let target = std::fs::read_link(&host)?.to_string_lossy().into_owned();
                self.insert(&path, Kind::Symlink, 0, Some(target));
            } else if file_type.is_file() {
                let wanted = is_module_path(&path)
                    || keeps_content(&path, meta.len())
                    || wants_digest(&path);
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
        let Some(content) = content else {
            return Ok(());
        };
        let mut content = HashingReader {
            inner: content,
            hasher: wants_digest(&path).then(Sha256::new),
        };
        if is_module_path(&path) {
            let info = read_module_from(&path, &mut content).map_err(|e| e.to_string());
            self.modules.insert(path.clone(), info);
        } else if keeps_content(&path, size) {
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            content.read_to_end(&mut bytes)?;
            self.contents.insert(path.clone(), bytes);
        }
        if let Some(hasher) = content.finish()? {
            self.digests.insert(path, hasher);
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
            self.modules.insert(path.clone(), info);
        }
        if let Some(digest) = self.digests.get(&existing).cloned() {
            self.digests.insert(path, digest);
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
            self.digests.remove(&key);
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

    /// The sha256 (hex) of the file at `path` (followed), for files [`wants_digest`] names.
    pub fn sha256(&self, path: &str) -> Option<&str> {
        self.digests.get(&self.resolve(path)?).map(String::as_str)
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
    fn streamed_modules_and_firmware_are_hashed_and_inbox_modules_not() {
        let mut s = Snapshot::default();
        let module = crate::modinfo::fake_module(&[("name", "x")]);
        let size = module.len() as u64;
        s.add_file("/usr/lib/modules/6.1/updates/x.ko", size, Some(&module[..]))
            .expect("add");
        s.add_file("/usr/lib/modules/6.1/kernel/y.ko", size, Some(&module[..]))
            .expect("add");
        s.add_file("/usr/lib/firmware/a.bin", 3, Some(&b"abc"[..]))
            .expect("add");
        s.add_symlink("/lib", "usr/lib");
        assert_eq!(
            s.sha256("/lib/firmware/a.bin"),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert_eq!(
            s.sha256("/lib/modules/6.1/updates/x.ko").map(str::len),
            Some(64)
        );
        assert!(s.modinfo("/lib/modules/6.1/updates/x.ko").is_some());
        assert_eq!(s.sha256("/lib/modules/6.1/kernel/y.ko"), None);
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

    /// Writes `files` (path, content) under `root`.
    fn tree(root: &Path, files: &[(&str, &str)]) {
        for (path, content) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("folders");
            std::fs::write(path, content).expect("file");
        }
    }

    #[test]
    fn layer_folders_in_overlay_form_read_as_the_rootfs_they_make() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (lower, upper, merged) = (
            tmp.path().join("lower"),
            tmp.path().join("upper"),
            tmp.path().join("merged"),
        );
        tree(
            &lower,
            &[
                ("etc/a.conf", "old"),
                ("d/old.conf", "o"),
                ("gone/x.conf", "x"),
                ("kept.conf", "k"),
            ],
        );
        tree(&upper, &[("etc/a.conf", "new"), ("d/new.conf", "n")]);
        tree(
            &merged,
            &[
                ("etc/a.conf", "new"),
                ("d/new.conf", "n"),
                ("kept.conf", "k"),
            ],
        );
        // A whiteout and an opaque folder, as overlayfs writes them (root only, as builds).
        let whiteout = rustix::fs::mknodat(
            rustix::fs::CWD,
            upper.join("gone"),
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        );
        let opaque = rustix::fs::lsetxattr(
            upper.join("d"),
            oci_layout::opaque_xattr(),
            b"y",
            rustix::fs::XattrFlags::empty(),
        );
        if whiteout.is_err() || opaque.is_err() {
            assert_ne!(rustix::process::geteuid().as_raw(), 0, "root makes both");
            return;
        }
        let layered = Snapshot::from_layer_dirs(&[&lower, &upper]).expect("layers");
        let plain = Snapshot::from_dir(&merged).expect("rootfs");
        let paths = |s: &Snapshot| {
            s.entries()
                .map(|(p, e)| (p.clone(), e.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(paths(&layered), paths(&plain));
        assert_eq!(layered.read_text("/etc/a.conf").as_deref(), Some("new"));
        assert!(layered.entry("/gone").is_none());
        assert_eq!(layered.list("/d"), vec!["new.conf"]);
    }
}
