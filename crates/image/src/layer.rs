//! Writing a folder as a layer tar, reproducibly: entries sorted, numeric owners, no user or
//! group names, mtimes clamped to the epoch, hard links kept, xattrs kept (`security.capability`),
//! and overlayfs whiteouts (char devices 0/0) and opaque folders turned into OCI `.wh.` entries.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use oci_layout::OverlayEntry;

/// How to read the folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A whole rootfs (a base).
    Tree,
    /// An overlayfs upper folder: whiteouts and opaque folders become `.wh.` entries.
    OverlayUpper,
}

/// Extended attributes kept in layers; overlayfs's own are dropped.
fn wanted_xattr(name: &str) -> bool {
    !oci_layout::is_overlay_xattr(name)
}

/// The device an empty regular file stands in for (rootless builds keep device nodes so).
fn device_stand_in(path: &Path, meta: &std::fs::Metadata) -> Option<oci_layout::DeviceStandIn> {
    (meta.is_file() && meta.len() == 0)
        .then(|| oci_layout::DeviceStandIn::of(path))
        .flatten()
}

fn xattrs(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut names = vec![0u8; 4096];
    let Ok(len) = rustix::fs::llistxattr(path, &mut names) else {
        return Vec::new();
    };
    let mut out: Vec<(String, Vec<u8>)> = names[..len]
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .filter_map(|n| std::str::from_utf8(n).ok().map(str::to_owned))
        .filter(|n| wanted_xattr(n))
        .filter_map(|name| {
            let mut value = vec![0u8; 65536];
            let len = rustix::fs::lgetxattr(path, name.as_str(), &mut value).ok()?;
            value.truncate(len);
            Some((name, value))
        })
        .collect();
    out.sort();
    out
}

/// Writes tar entries for a folder tree.
pub struct LayerWriter<W: Write> {
    builder: tar::Builder<W>,
    epoch: u64,
    source: Source,
    links: HashMap<(u64, u64), PathBuf>,
}

impl<W: Write> LayerWriter<W> {
    /// A writer that clamps mtimes to `epoch` (seconds).
    pub fn new(out: W, epoch: u64, source: Source) -> Self {
        let mut builder = tar::Builder::new(out);
        builder.mode(tar::HeaderMode::Deterministic);
        builder.follow_symlinks(false);
        Self {
            builder,
            epoch,
            source,
            links: HashMap::new(),
        }
    }

    fn header(&self, meta: &std::fs::Metadata, kind: tar::EntryType) -> tar::Header {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_mode(meta.mode() & 0o7777);
        header.set_uid(meta.uid().into());
        header.set_gid(meta.gid().into());
        header.set_mtime((meta.mtime().max(0) as u64).min(self.epoch));
        header.set_size(0);
        header
    }

    fn pax_xattrs(&mut self, path: &Path) -> std::io::Result<()> {
        let attrs = xattrs(path);
        if attrs.is_empty() {
            return Ok(());
        }
        let records: Vec<(String, Vec<u8>)> = attrs
            .into_iter()
            .map(|(k, v)| (format!("SCHILY.xattr.{k}"), v))
            .collect();
        self.builder
            .append_pax_extensions(records.iter().map(|(k, v)| (k.as_str(), v.as_slice())))
    }

    fn whiteout(&mut self, name: &Path) -> std::io::Result<()> {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_mtime(self.epoch);
        header.set_size(0);
        self.builder
            .append_data(&mut header, name, std::io::empty())
    }

    /// Adds everything below `dir`, as paths relative to it, depth first in byte order.
    pub fn add_tree(&mut self, dir: &Path) -> std::io::Result<()> {
        self.walk(dir, Path::new(""))
    }

    fn walk(&mut self, base: &Path, rel: &Path) -> std::io::Result<()> {
        let dir = base.join(rel);
        let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(&dir)?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()?;
        names.sort();
        for name in names {
            let rel_path = rel.join(&name);
            let path = base.join(&rel_path);
            let meta = std::fs::symlink_metadata(&path)?;
            let kind = meta.file_type();
            let overlay = match self.source {
                Source::OverlayUpper => OverlayEntry::of(&path, &meta),
                Source::Tree => OverlayEntry::Plain,
            };
            if overlay == OverlayEntry::Whiteout {
                let whiteout = rel.join(format!(".wh.{}", name.to_string_lossy()));
                self.whiteout(&whiteout)?;
                continue;
            }
            self.pax_xattrs(&path)?;
            if kind.is_dir() {
                let mut header = self.header(&meta, tar::EntryType::Directory);
                self.builder.append_data(
                    &mut header,
                    format!("{}/", rel_path.display()),
                    std::io::empty(),
                )?;
                if overlay == OverlayEntry::OpaqueDir {
                    self.whiteout(&rel_path.join(".wh..wh..opq"))?;
                }
                self.walk(base, &rel_path)?;
            } else if kind.is_symlink() {
                let mut header = self.header(&meta, tar::EntryType::Symlink);
                let target = std::fs::read_link(&path)?;
                self.builder.append_link(&mut header, &rel_path, target)?;
            } else if let Some(device) = device_stand_in(&path, &meta) {
                let entry = match device.kind {
                    oci_layout::DeviceKind::Char => tar::EntryType::Char,
                    oci_layout::DeviceKind::Block => tar::EntryType::Block,
                };
                let mut header = self.header(&meta, entry);
                header.set_device_major(device.major)?;
                header.set_device_minor(device.minor)?;
                self.builder
                    .append_data(&mut header, &rel_path, std::io::empty())?;
            } else if kind.is_file() {
                if meta.nlink() > 1 {
                    let key = (meta.dev(), meta.ino());
                    if let Some(first) = self.links.get(&key).cloned() {
                        let mut header = self.header(&meta, tar::EntryType::Link);
                        self.builder.append_link(&mut header, &rel_path, first)?;
                        continue;
                    }
                    self.links.insert(key, rel_path.clone());
                }
                let mut header = self.header(&meta, tar::EntryType::Regular);
                header.set_size(meta.len());
                let file = std::fs::File::open(&path)?;
                self.builder.append_data(&mut header, &rel_path, file)?;
            } else if kind.is_char_device() || kind.is_block_device() || kind.is_fifo() {
                let entry = if kind.is_char_device() {
                    tar::EntryType::Char
                } else if kind.is_block_device() {
                    tar::EntryType::Block
                } else {
                    tar::EntryType::Fifo
                };
                let mut header = self.header(&meta, entry);
                let rdev = meta.rdev();
                header.set_device_major(rustix::fs::major(rdev))?;
                header.set_device_minor(rustix::fs::minor(rdev))?;
                self.builder
                    .append_data(&mut header, &rel_path, std::io::empty())?;
            }
            // Sockets are not kept.
        }
        Ok(())
    }

    /// Ends the archive and returns the output.
    pub fn finish(self) -> std::io::Result<W> {
        self.builder.into_inner()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(bytes: &[u8]) -> Vec<(String, tar::EntryType, u64)> {
        let mut archive = tar::Archive::new(bytes);
        archive
            .entries()
            .expect("entries")
            .map(|e| {
                let e = e.expect("entry");
                let h = e.header();
                (
                    String::from_utf8_lossy(&e.path_bytes()).into_owned(),
                    h.entry_type(),
                    h.mtime().expect("mtime"),
                )
            })
            .collect()
    }

    #[test]
    fn sorted_clamped_with_hardlinks_and_whiteouts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::create_dir_all(d.join("b/sub")).expect("mkdir");
        std::fs::write(d.join("b/z"), "z").expect("write");
        std::fs::write(d.join("a"), "a").expect("write");
        std::fs::hard_link(d.join("a"), d.join("b/a-link")).expect("link");
        std::os::unix::fs::symlink("../a", d.join("b/sym")).expect("symlink");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            d.join("gone").as_path(),
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::empty(),
            0,
        )
        .expect("whiteout");
        let out = LayerWriter::new(Vec::new(), 1000, Source::OverlayUpper);
        let mut out = out;
        out.add_tree(d).expect("tar");
        let bytes = out.finish().expect("finish");
        let got = entries(&bytes);
        let names: Vec<&str> = got.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(
            names,
            vec!["a", "b/", "b/a-link", "b/sub/", "b/sym", "b/z", ".wh.gone"]
        );
        assert_eq!(got[2].1, tar::EntryType::Link);
        assert!(got.iter().all(|(_, _, m)| *m <= 1000));
        // The same tree gives the same bytes.
        let mut again = LayerWriter::new(Vec::new(), 1000, Source::OverlayUpper);
        again.add_tree(d).expect("tar");
        assert_eq!(again.finish().expect("finish"), bytes);
    }
}
