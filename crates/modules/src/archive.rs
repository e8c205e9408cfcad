//! Extracting tar archives into a rootfs folder, refusing anything that would land outside it:
//! `..` and absolute names, symlinks that point out, writes through symlinks, hard links to
//! outside, device nodes, and archives past the entry and size limits.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use oci_layout::{walk_layer, LayerChange, WalkError, WalkOptions, Whiteout};

use crate::rootfs::{Kind, RootFs};

/// Why an archive was refused or could not be extracted.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// An entry would land outside the destination.
    #[error("refused: entry '{entry}' {why}")]
    Unsafe {
        /// The entry's name in the archive.
        entry: String,
        /// What it would do.
        why: String,
    },
    /// Past a limit.
    #[error("refused: {0}")]
    Limit(String),
    /// The archive is not a valid tar (or is cut short).
    #[error("not a valid archive: {0}")]
    Corrupt(String),
    /// Writing into the rootfs failed.
    #[error(transparent)]
    Fs(#[from] crate::rootfs::FsError),
}

impl From<WalkError> for ArchiveError {
    fn from(e: WalkError) -> Self {
        match e {
            WalkError::Corrupt(why) => ArchiveError::Corrupt(why),
            WalkError::Unsafe { entry, why } => ArchiveError::Unsafe { entry, why },
        }
    }
}

/// What an archive's OCI whiteouts (`.wh.name`, `.wh..wh..opq`) become.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Whiteouts {
    /// Ordinary files of that name (an archive that is not an image layer).
    #[default]
    Keep,
    /// Applied: `.wh.name` removes `name`, `.wh..wh..opq` empties its folder (a layer unpacked
    /// onto the layers below it).
    Apply,
    /// Kept in overlayfs form: `.wh.name` becomes a character device 0/0 named `name`,
    /// `.wh..wh..opq` marks its folder opaque (`trusted.overlay.opaque`); a layer unpacked on
    /// its own, as an overlay lower.
    Overlay,
}

/// Limits that stop tar bombs.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Entries at most.
    pub max_entries: u64,
    /// Bytes of file content at most.
    pub max_bytes: u64,
    /// Allow device nodes and fifos (base layers need them; `unarchive` does not).
    pub allow_devices: bool,
    /// What `.wh.` entries (OCI whiteouts) mean.
    pub whiteouts: Whiteouts,
    /// Leading path components dropped from every name (tar's `--strip-components`).
    pub strip_components: usize,
    /// Leave a file that is newer than the archive's copy (tar's `--keep-newer-files`).
    pub keep_newer: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_entries: 2_000_000,
            max_bytes: 64 << 30,
            allow_devices: false,
            whiteouts: Whiteouts::Keep,
            strip_components: 0,
            keep_newer: false,
        }
    }
}

/// What an extraction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    /// Entries in the archive.
    pub entries: u64,
    /// Entries written (the rest were already there, same size and time).
    pub written: u64,
    /// Files left as they were because they are newer than the archive's copy
    /// ([`Limits::keep_newer`]).
    pub kept_newer: u64,
    /// Names of the entries, in archive order.
    pub files: Vec<String>,
}

/// Lexically resolves `target` of a symlink at `link` (both rootfs paths); `None` if it climbs above `/`.
fn resolve_link(link: &Path, target: &str) -> Option<PathBuf> {
    let start = if target.starts_with('/') {
        PathBuf::from("/")
    } else {
        link.parent()?.to_path_buf()
    };
    let mut out = start;
    for c in Path::new(target).components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir if !out.pop() => return None,
            _ => {}
        }
    }
    Some(out)
}

/// Refuses writing through a symlink between `dest` and `path`.
fn check_no_symlink_between(
    fs: &RootFs,
    dest: &Path,
    path: &Path,
    entry: &str,
) -> Result<(), ArchiveError> {
    let Ok(rel) = path.strip_prefix(dest) else {
        return Ok(());
    };
    let mut current = dest.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        current.push(part);
        if fs.meta(&current)?.is_some_and(|m| m.kind == Kind::Symlink) {
            return Err(ArchiveError::Unsafe {
                entry: entry.to_owned(),
                why: format!("would be written through the symlink {}", current.display()),
            });
        }
    }
    Ok(())
}

/// Acts on the whiteout `what` found in `parent`: applies it, or writes it in overlayfs form.
fn whiteout(
    fs: &RootFs,
    parent: &Path,
    what: Whiteout,
    how: Whiteouts,
) -> Result<(), ArchiveError> {
    match (how, what) {
        (Whiteouts::Keep, _) | (_, Whiteout::None) => {}
        (Whiteouts::Apply, Whiteout::Opaque) => {
            if fs.meta(parent)?.is_some_and(|m| m.kind == Kind::Dir) {
                for child in fs.list(parent)? {
                    fs.remove_all(&parent.join(child))?;
                }
            }
        }
        (Whiteouts::Apply, Whiteout::Hides(hidden)) => {
            fs.remove_all(&parent.join(hidden))?;
        }
        (Whiteouts::Overlay, Whiteout::Opaque) => {
            fs.mkdir_all(parent, 0o755)?;
            fs.set_xattr(parent, oci_layout::opaque_xattr(), b"y")?;
        }
        (Whiteouts::Overlay, Whiteout::Hides(hidden)) => {
            fs.mkdir_all(parent, 0o755)?;
            let path = parent.join(hidden);
            fs.remove_all(&path)?;
            fs.mknod(&path, rustix::fs::FileType::CharacterDevice, 0, 0)?;
        }
    }
    Ok(())
}

/// Extracts a tar stream into `dest` (a rootfs path) with owners, modes and times of the archive.
pub fn extract_tar<R: Read>(
    reader: R,
    fs: &RootFs,
    dest: &Path,
    limits: Limits,
) -> Result<Extracted, ArchiveError> {
    let mut stats = Extracted::default();
    let mut bytes = 0u64;
    let options = WalkOptions {
        whiteouts: limits.whiteouts != Whiteouts::Keep,
        strip_components: limits.strip_components,
    };
    walk_layer(reader, options, |name, change| {
        stats.entries += 1;
        if stats.entries > limits.max_entries {
            return Err(ArchiveError::Limit(format!(
                "more than {} entries (a tar bomb?)",
                limits.max_entries
            )));
        }
        match change {
            LayerChange::Put { path, entry } => {
                let path = dest.join(path);
                check_no_symlink_between(fs, dest, &path, name)?;
                stats.files.push(name.to_owned());
                if limits.keep_newer && newer_here(fs, entry.header(), &path)? {
                    stats.kept_newer += 1;
                    return Ok(());
                }
                if extract_entry(fs, entry, &path, name, dest, &limits, &mut bytes)? {
                    stats.written += 1;
                }
                Ok(())
            }
            LayerChange::Opaque { dir } => {
                let dir = dest.join(dir);
                // The entry is the folder's `.wh..wh..opq`: nothing between may be a symlink.
                check_no_symlink_between(fs, dest, &dir.join(".wh..wh..opq"), name)?;
                whiteout(fs, &dir, Whiteout::Opaque, limits.whiteouts)
            }
            LayerChange::Hide { path } => {
                let path = dest.join(path);
                check_no_symlink_between(fs, dest, &path, name)?;
                match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
                    (Some(parent), Some(hidden)) => {
                        whiteout(fs, parent, Whiteout::Hides(hidden), limits.whiteouts)
                    }
                    _ => Ok(()),
                }
            }
        }
    })?;
    Ok(stats)
}

/// Whether a file entry's `path` holds a file newer than the entry (tar's
/// `--keep-newer-files` leaves it).
fn newer_here(fs: &RootFs, header: &tar::Header, path: &Path) -> Result<bool, ArchiveError> {
    let file = matches!(
        header.entry_type(),
        tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::GNUSparse
    );
    if !file {
        return Ok(false);
    }
    let archived = EntryMeta::of(header).mtime;
    Ok(fs.meta(path)?.is_some_and(|m| m.mtime > archived))
}

/// Extracts one entry at `path`, counting its content against the limit; whether it wrote.
fn extract_entry<R: Read>(
    fs: &RootFs,
    entry: &mut tar::Entry<'_, R>,
    path: &Path,
    name: &str,
    dest: &Path,
    limits: &Limits,
    bytes: &mut u64,
) -> Result<bool, ArchiveError> {
    let xattrs = pax_xattrs(entry);
    let meta = EntryMeta::of(entry.header());
    match entry.header().entry_type() {
        tar::EntryType::Directory => extract_dir(fs, path, meta),
        tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::GNUSparse => {
            *bytes = bytes.saturating_add(entry.size());
            if *bytes > limits.max_bytes {
                return Err(ArchiveError::Limit(format!(
                    "more than {} bytes of content",
                    limits.max_bytes
                )));
            }
            extract_file(fs, entry, path, name, meta, &xattrs)
        }
        tar::EntryType::Symlink => extract_symlink(fs, entry, path, name, dest, meta),
        tar::EntryType::Link => extract_hardlink(fs, entry, path, name, dest, limits),
        tar::EntryType::Char | tar::EntryType::Block | tar::EntryType::Fifo => {
            extract_device(fs, entry.header(), path, name, meta, limits)
        }
        tar::EntryType::XGlobalHeader
        | tar::EntryType::XHeader
        | tar::EntryType::GNULongName
        | tar::EntryType::GNULongLink => Ok(false),
        other => Err(ArchiveError::Unsafe {
            entry: name.to_owned(),
            why: format!("has an entry type ({other:?}) imgbuild does not extract"),
        }),
    }
}

/// What an entry's header says of the file it makes: mode, owner and time.
#[derive(Debug, Clone, Copy)]
struct EntryMeta {
    /// Permission bits (0644 when the header has none).
    mode: u32,
    /// Owner, when the header has a valid one.
    uid: Option<u32>,
    /// Group, when the header has a valid one.
    gid: Option<u32>,
    /// Modification time (0 when the header has none).
    mtime: i64,
}

impl EntryMeta {
    /// Reads the entry's header.
    fn of(header: &tar::Header) -> Self {
        Self {
            mode: header.mode().unwrap_or(0o644) & 0o7777,
            uid: header.uid().ok().and_then(|u| u32::try_from(u).ok()),
            gid: header.gid().ok().and_then(|g| u32::try_from(g).ok()),
            mtime: header
                .mtime()
                .ok()
                .and_then(|m| i64::try_from(m).ok())
                .unwrap_or(0),
        }
    }
}

/// The extended attributes an entry carries in its PAX headers (`SCHILY.xattr.*`).
fn pax_xattrs<R: Read>(entry: &mut tar::Entry<'_, R>) -> Vec<(String, Vec<u8>)> {
    match entry.pax_extensions() {
        Ok(Some(extensions)) => extensions
            .filter_map(Result::ok)
            .filter_map(|ext| {
                let key = ext.key().ok()?;
                let name = key.strip_prefix("SCHILY.xattr.")?;
                Some((name.to_owned(), ext.value_bytes().to_vec()))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A folder entry: made when missing, owner and mode set; whether it was made.
fn extract_dir(fs: &RootFs, path: &Path, meta: EntryMeta) -> Result<bool, ArchiveError> {
    let mut written = false;
    if !fs.meta(path)?.is_some_and(|m| m.kind == Kind::Dir) {
        fs.mkdir_all(path, meta.mode)?;
        written = true;
    }
    fs.chown(path, meta.uid, meta.gid)?;
    fs.chmod(path, meta.mode)?;
    Ok(written)
}

/// A regular file: written with its owner, mode, xattrs and time, unless the same file (size,
/// time and mode) is there already; whether it was written.
fn extract_file<R: Read>(
    fs: &RootFs,
    entry: &mut tar::Entry<'_, R>,
    path: &Path,
    name: &str,
    meta: EntryMeta,
    xattrs: &[(String, Vec<u8>)],
) -> Result<bool, ArchiveError> {
    let size = entry.size();
    let same = fs.meta(path)?.is_some_and(|m| {
        m.kind == Kind::File && m.size == size && m.mtime == meta.mtime && m.mode == meta.mode
    });
    if same {
        return Ok(false);
    }
    if let Some(parent) = path.parent() {
        fs.mkdir_all(parent, 0o755)?;
    }
    if fs.meta(path)?.is_some_and(|m| m.kind == Kind::Dir) {
        fs.remove_all(path)?;
    }
    fs.write_from(path, entry, Some(meta.mode)).map_err(|e| {
        if e.source.kind() == std::io::ErrorKind::UnexpectedEof {
            ArchiveError::Corrupt(format!("entry '{name}' is cut short"))
        } else {
            ArchiveError::Fs(e)
        }
    })?;
    // chown clears setuid/setgid bits and file capabilities: mode and xattrs follow it.
    fs.chown(path, meta.uid, meta.gid)?;
    fs.chmod(path, meta.mode)?;
    for (name, value) in xattrs {
        fs.set_xattr(path, name, value)?;
    }
    fs.set_times(path, meta.mtime)?;
    Ok(true)
}

/// The target a link entry names (`what`: symlink or hard link, for the error).
fn link_target<R: Read>(
    entry: &tar::Entry<'_, R>,
    name: &str,
    what: &str,
) -> Result<String, ArchiveError> {
    entry
        .link_name_bytes()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .ok_or_else(|| ArchiveError::Corrupt(format!("{what} '{name}' has no target")))
}

/// A symlink, refused when it points outside `dest`; left alone when the same one is there;
/// whether it was made.
fn extract_symlink<R: Read>(
    fs: &RootFs,
    entry: &tar::Entry<'_, R>,
    path: &Path,
    name: &str,
    dest: &Path,
    meta: EntryMeta,
) -> Result<bool, ArchiveError> {
    let target = link_target(entry, name, "symlink")?;
    let resolved = resolve_link(path, &target);
    if !resolved.as_deref().is_some_and(|r| r.starts_with(dest)) {
        return Err(ArchiveError::Unsafe {
            entry: name.to_owned(),
            why: format!("is a symlink to '{target}', outside {}", dest.display()),
        });
    }
    if fs.meta(path)?.is_some_and(|m| m.kind == Kind::Symlink) && fs.read_link(path)? == target {
        return Ok(false);
    }
    if let Some(parent) = path.parent() {
        fs.mkdir_all(parent, 0o755)?;
    }
    fs.symlink(&target, path)?;
    fs.chown(path, meta.uid, meta.gid)?;
    Ok(true)
}

/// A hard link, refused unless its target is inside `dest` and the archive made it already.
fn extract_hardlink<R: Read>(
    fs: &RootFs,
    entry: &tar::Entry<'_, R>,
    path: &Path,
    name: &str,
    dest: &Path,
    limits: &Limits,
) -> Result<bool, ArchiveError> {
    let target = link_target(entry, name, "hard link")?;
    let target_rel = oci_layout::relative(&target).map_err(|why| ArchiveError::Unsafe {
        entry: name.to_owned(),
        why: format!("is a hard link to '{target}', which {why}"),
    })?;
    let target_rel: PathBuf = target_rel
        .components()
        .skip(limits.strip_components)
        .collect();
    let target_path = dest.join(target_rel);
    check_no_symlink_between(fs, dest, &target_path, name)?;
    if fs.meta(&target_path)?.is_none() {
        return Err(ArchiveError::Unsafe {
            entry: name.to_owned(),
            why: format!("is a hard link to '{target}', which the archive has not created"),
        });
    }
    fs.hardlink(&target_path, path)?;
    Ok(true)
}

/// A device node or fifo, made only when the limits allow devices (a base layer's, never a
/// role's archive).
fn extract_device(
    fs: &RootFs,
    header: &tar::Header,
    path: &Path,
    name: &str,
    meta: EntryMeta,
    limits: &Limits,
) -> Result<bool, ArchiveError> {
    if !limits.allow_devices {
        return Err(ArchiveError::Unsafe {
            entry: name.to_owned(),
            why: "is a device node or fifo, which an archive in a role may not create".into(),
        });
    }
    let file_type = match header.entry_type() {
        tar::EntryType::Char => rustix::fs::FileType::CharacterDevice,
        tar::EntryType::Block => rustix::fs::FileType::BlockDevice,
        _ => rustix::fs::FileType::Fifo,
    };
    let major = header.device_major().ok().flatten().unwrap_or(0);
    let minor = header.device_minor().ok().flatten().unwrap_or(0);
    if let Some(parent) = path.parent() {
        fs.mkdir_all(parent, 0o755)?;
    }
    fs.remove_all(path)?;
    fs.mknod(
        path,
        file_type,
        meta.mode,
        rustix::fs::makedev(major, minor),
    )?;
    fs.chown(path, meta.uid, meta.gid)?;
    // mknod is subject to the umask.
    fs.chmod(path, meta.mode)?;
    Ok(true)
}

/// The decompressing reader for an archive (`.tar`, `.tar.gz`, `.tgz`, `.tar.xz`, `.txz`): the
/// compression read from its first bytes, as GNU tar reads it (a `.tar` that is gzip'd is
/// extracted as such), else from its name.
pub fn tar_reader(name: &str, file: std::fs::File) -> Result<Box<dyn Read>, ArchiveError> {
    const GZIP: &[u8] = &[0x1f, 0x8b];
    const XZ: &[u8] = &[0xfd, b'7', b'z', b'X', b'Z', 0];
    let lower = name.to_ascii_lowercase();
    let mut buffered = std::io::BufReader::with_capacity(1 << 20, file);
    let head = std::io::BufRead::fill_buf(&mut buffered)
        .map_err(|e| ArchiveError::Corrupt(format!("{name}: {e}")))?;
    let (gzip, xz) = (head.starts_with(GZIP), head.starts_with(XZ));
    let known = [".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz"];
    if gzip || !xz && (lower.ends_with(".tar.gz") || lower.ends_with(".tgz")) {
        Ok(Box::new(flate2::read::MultiGzDecoder::new(buffered)))
    } else if xz || lower.ends_with(".tar.xz") || lower.ends_with(".txz") {
        Ok(Box::new(liblzma::read::XzDecoder::new_multi_decoder(
            buffered,
        )))
    } else if known.iter().any(|k| lower.ends_with(k)) {
        Ok(Box::new(buffered))
    } else {
        Err(ArchiveError::Corrupt(format!(
            "{name}: imgbuild extracts .tar, .tar.gz, .tgz, .tar.xz and .txz"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs() -> (tempfile::TempDir, RootFs) {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("root/dest")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("scratch")).expect("mkdir");
        let fs =
            RootFs::new(&dir.path().join("root"), &dir.path().join("scratch")).expect("rootfs");
        (dir, fs)
    }

    fn tar_of(entries: &[(&str, tar::EntryType, &str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, kind, link, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_mode(0o644);
            header.set_size(data.len() as u64);
            header.set_mtime(1_700_000_000);
            // Write names raw so that hostile names reach the reader as they are.
            let bytes = name.as_bytes();
            header.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
            if !link.is_empty() {
                header.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
            header.set_cksum();
            builder.append(&header, *data).expect("append");
        }
        builder.into_inner().expect("tar")
    }

    #[test]
    fn whiteouts_are_applied_or_kept_in_overlay_form() {
        let data = tar_of(&[
            ("etc/", tar::EntryType::Directory, "", b""),
            ("etc/.wh.motd", tar::EntryType::Regular, "", b""),
            ("srv/", tar::EntryType::Directory, "", b""),
            ("srv/.wh..wh..opq", tar::EntryType::Regular, "", b""),
            ("srv/new", tar::EntryType::Regular, "", b"new\n"),
        ]);
        let below = |root: &Path| {
            std::fs::create_dir_all(root.join("etc")).expect("mkdir");
            std::fs::create_dir_all(root.join("srv")).expect("mkdir");
            std::fs::write(root.join("etc/motd"), "hi").expect("write");
            std::fs::write(root.join("srv/old"), "old").expect("write");
        };
        let (dir, rootfs) = fs();
        below(&dir.path().join("root"));
        let limits = |whiteouts| Limits {
            whiteouts,
            ..Limits::default()
        };
        extract_tar(&data[..], &rootfs, Path::new("/"), limits(Whiteouts::Apply)).expect("apply");
        let root = dir.path().join("root");
        assert!(!root.join("etc/motd").exists(), "removed");
        assert!(!root.join("srv/old").exists(), "the opaque folder emptied");
        assert!(root.join("srv/new").is_file());
        assert!(!root.join("etc/.wh.motd").exists());

        let (dir, rootfs) = fs();
        extract_tar(
            &data[..],
            &rootfs,
            Path::new("/"),
            limits(Whiteouts::Overlay),
        )
        .expect("overlay");
        let root = dir.path().join("root");
        let meta = std::fs::symlink_metadata(root.join("etc/motd")).expect("a whiteout");
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        assert!(meta.file_type().is_char_device() && meta.rdev() == 0);
        let mut value = [0u8; 4];
        let n = rustix::fs::lgetxattr(root.join("srv"), oci_layout::opaque_xattr(), &mut value)
            .expect("opaque mark (needs root)");
        assert_eq!(&value[..n], b"y");
        assert!(root.join("srv/new").is_file() && !root.join("srv/.wh..wh..opq").exists());
    }

    #[test]
    fn extracts_files_dirs_and_links() {
        let (dir, fs) = fs();
        let data = tar_of(&[
            ("pkg/", tar::EntryType::Directory, "", b""),
            ("pkg/install", tar::EntryType::Regular, "", b"#!/bin/sh\n"),
            ("pkg/link", tar::EntryType::Symlink, "install", b""),
            ("pkg/hard", tar::EntryType::Link, "pkg/install", b""),
        ]);
        let stats =
            extract_tar(&data[..], &fs, Path::new("/dest"), Limits::default()).expect("extract");
        assert_eq!(stats.entries, 4);
        assert_eq!(
            std::fs::read(dir.path().join("root/dest/pkg/hard")).expect("read"),
            b"#!/bin/sh\n"
        );
        let again = extract_tar(&data[..], &fs, Path::new("/dest"), Limits::default())
            .expect("extract again");
        assert_eq!(
            again.written, 1,
            "only the hard link is re-made on a second run"
        );
    }

    #[test]
    fn refuses_escapes() {
        let cases: Vec<Vec<u8>> = vec![
            tar_of(&[("../evil", tar::EntryType::Regular, "", b"x")]),
            tar_of(&[("/etc/evil", tar::EntryType::Regular, "", b"x")]),
            tar_of(&[("out", tar::EntryType::Symlink, "../../etc", b"")]),
            tar_of(&[("out", tar::EntryType::Symlink, "/etc", b"")]),
            tar_of(&[("hl", tar::EntryType::Link, "../etc/passwd", b"")]),
            tar_of(&[("dev", tar::EntryType::Char, "", b"")]),
        ];
        for data in cases {
            let (dir, fs) = fs();
            let err = extract_tar(&data[..], &fs, Path::new("/dest"), Limits::default())
                .expect_err("must refuse");
            assert!(matches!(err, ArchiveError::Unsafe { .. }), "{err}");
            assert!(
                !dir.path().join("root/evil").exists() && !dir.path().join("root/etc").exists()
            );
        }
    }

    #[test]
    fn compression_is_read_from_the_first_bytes_as_gnu_tar_does() {
        let data = tar_of(&[("f", tar::EntryType::Regular, "", b"x")]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &data).expect("gzip");
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("a.tar");
        std::fs::write(&file, gz.finish().expect("gzip")).expect("write");
        let open = || std::fs::File::open(&file).expect("open");
        let mut entries = tar::Archive::new(tar_reader("a.tar", open()).expect("reader"));
        let names: Vec<String> = entries
            .entries()
            .expect("entries")
            .map(|e| {
                e.expect("entry")
                    .path()
                    .expect("path")
                    .display()
                    .to_string()
            })
            .collect();
        assert_eq!(names, ["f"]);
        let plain = dir.path().join("a.zip");
        std::fs::write(&plain, &data).expect("write");
        let plain = std::fs::File::open(&plain).expect("open");
        assert!(
            tar_reader("a.zip", plain).is_err(),
            "a plain tar by another name"
        );
    }

    #[test]
    fn keep_newer_leaves_a_file_newer_than_the_archives_copy() {
        let data = tar_of(&[("f", tar::EntryType::Regular, "", b"archived")]);
        for keep_newer in [true, false] {
            let (dir, fs) = fs();
            // Written now: newer than the entry's 2023 time.
            std::fs::write(dir.path().join("root/dest/f"), "mine").expect("write");
            let limits = Limits {
                keep_newer,
                ..Limits::default()
            };
            let stats = extract_tar(&data[..], &fs, Path::new("/dest"), limits).expect("extract");
            let text = std::fs::read_to_string(dir.path().join("root/dest/f")).expect("read");
            assert_eq!(text, if keep_newer { "mine" } else { "archived" });
            assert_eq!(
                (stats.kept_newer, stats.written),
                if keep_newer { (1, 0) } else { (0, 1) }
            );
        }
    }

    #[test]
    fn refuses_writing_through_an_existing_symlink() {
        let (dir, fs) = fs();
        std::fs::create_dir_all(dir.path().join("root/elsewhere")).expect("mkdir");
        std::os::unix::fs::symlink("/elsewhere", dir.path().join("root/dest/sub")).expect("link");
        let data = tar_of(&[("sub/file", tar::EntryType::Regular, "", b"x")]);
        let err = extract_tar(&data[..], &fs, Path::new("/dest"), Limits::default())
            .expect_err("through symlink");
        assert!(err.to_string().contains("through the symlink"), "{err}");
        assert!(!dir.path().join("root/elsewhere/file").exists());
    }

    #[test]
    fn refuses_a_symlink_then_a_file_through_it() {
        for dest in ["/dest", "/"] {
            let (dir, fs) = fs();
            std::fs::create_dir_all(dir.path().join("root/etc")).expect("mkdir");
            let data = tar_of(&[
                ("etc2", tar::EntryType::Symlink, "etc", b""),
                (
                    "etc2/passwd",
                    tar::EntryType::Regular,
                    "",
                    b"root::0:0::/:/bin/sh\n",
                ),
            ]);
            let limits = Limits {
                allow_devices: dest == "/",
                whiteouts: if dest == "/" {
                    Whiteouts::Apply
                } else {
                    Whiteouts::Keep
                },
                ..Limits::default()
            };
            let err = extract_tar(&data[..], &fs, Path::new(dest), limits)
                .expect_err("through the archive's own symlink");
            assert!(
                err.to_string().contains("through the symlink"),
                "{dest}: {err}"
            );
            assert!(!dir.path().join("root/etc/passwd").exists());
        }
    }

    #[test]
    fn a_huge_declared_size_is_refused_or_reported_corrupt() {
        let (dir, fs) = fs();
        // A header declaring 1 TiB with a few bytes behind it.
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_size(1 << 40);
        header.as_old_mut().name[..4].copy_from_slice(b"huge");
        header.set_cksum();
        let mut data = header.as_bytes().to_vec();
        data.extend_from_slice(&[0u8; 1024]);
        let limits = Limits {
            max_bytes: 1 << 30,
            ..Limits::default()
        };
        let err = extract_tar(&data[..], &fs, Path::new("/dest"), limits).expect_err("refused");
        assert!(matches!(err, ArchiveError::Limit(_)), "{err}");
        assert!(!dir.path().join("root/dest/huge").exists());
        // Within the limit, the short body is an error too, not a silent short file.
        let generous = Limits {
            max_bytes: 2 << 40,
            ..Limits::default()
        };
        let err = extract_tar(&data[..], &fs, Path::new("/dest"), generous).expect_err("short");
        assert!(!matches!(err, ArchiveError::Limit(_)), "{err}");
    }

    #[test]
    fn limits_stop_bombs() {
        let (_dir, fs) = fs();
        let entries: Vec<(String, tar::EntryType, &str, &[u8])> = (0..20)
            .map(|i| (format!("f{i}"), tar::EntryType::Regular, "", &b"x"[..]))
            .collect();
        let refs: Vec<(&str, tar::EntryType, &str, &[u8])> = entries
            .iter()
            .map(|(n, k, l, d)| (n.as_str(), *k, *l, *d))
            .collect();
        let data = tar_of(&refs);
        let limits = Limits {
            max_entries: 10,
            ..Limits::default()
        };
        assert!(matches!(
            extract_tar(&data[..], &fs, Path::new("/dest"), limits),
            Err(ArchiveError::Limit(_))
        ));
    }
}
