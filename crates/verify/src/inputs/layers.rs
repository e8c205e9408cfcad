//! An image layer (a tar) applied onto a snapshot, OCI whiteouts honoured.

use std::io::{BufReader, Read};
use std::path::Path;

use oci_layout::{walk_layer, LayerChange, WalkError, WalkOptions};

use crate::snapshot::Snapshot;

/// Applies the layer tar `reader` (compressed or not) onto `snapshot`.
pub fn apply(snapshot: &mut Snapshot, reader: impl Read) -> std::io::Result<()> {
    snapshot.next_layer();
    let layer = WalkOptions {
        whiteouts: true,
        ..WalkOptions::default()
    };
    let tar = super::decompress::decompressed(BufReader::new(reader))?;
    walk_layer(tar, layer, |_, change| match change {
        LayerChange::Opaque { dir } => {
            snapshot.make_opaque(&absolute(&dir));
            Ok(())
        }
        LayerChange::Hide { path } => {
            snapshot.remove(&absolute(&path));
            Ok(())
        }
        LayerChange::Put { path, entry } => put(snapshot, &absolute(&path), entry),
    })
    .map_err(|e: Failure| e.0)
}

/// A walk's failure as the snapshot's readers report it.
struct Failure(std::io::Error);

impl From<WalkError> for Failure {
    fn from(e: WalkError) -> Self {
        Failure(std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure(e)
    }
}

/// A path of the layer as the snapshot names it: from `/`.
fn absolute(path: &Path) -> String {
    format!("/{}", path.display())
}

/// Puts one entry in the snapshot at `path`.
fn put<R: Read>(
    snapshot: &mut Snapshot,
    path: &str,
    entry: &mut tar::Entry<'_, R>,
) -> Result<(), Failure> {
    let header = entry.header();
    let kind = header.entry_type();
    let link = || -> std::io::Result<String> {
        Ok(header
            .link_name()?
            .map(|l| l.to_string_lossy().into_owned())
            .unwrap_or_default())
    };
    if kind.is_dir() {
        snapshot.add_dir(path);
    } else if kind.is_symlink() {
        let target = link()?;
        snapshot.add_symlink(path, &target);
    } else if kind.is_hard_link() {
        let target = link()?;
        snapshot.add_hardlink(path, &format!("/{}", target.trim_start_matches("./")));
    } else if kind.is_file() || kind == tar::EntryType::Continuous {
        let size = entry.size();
        snapshot.add_file(path, size, Some(entry))?;
    } else {
        snapshot.add_other(path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, data) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder
                .append_data(&mut header, path, *data)
                .expect("append");
        }
        builder.into_inner().expect("tar")
    }

    #[test]
    fn later_layers_replace_and_whiteouts_remove() {
        let mut s = Snapshot::default();
        apply(
            &mut s,
            layer(&[
                ("etc/modprobe.d/a.conf", b"old"),
                ("etc/modprobe.d/b.conf", b"b"),
                ("root/mok.key", b"k"),
            ])
            .as_slice(),
        )
        .expect("first");
        apply(
            &mut s,
            layer(&[
                ("etc/modprobe.d/a.conf", b"new"),
                ("etc/modprobe.d/.wh.b.conf", b""),
                ("root/.wh..wh..opq", b""),
            ])
            .as_slice(),
        )
        .expect("second");
        assert_eq!(
            s.read_text("/etc/modprobe.d/a.conf").as_deref(),
            Some("new")
        );
        assert_eq!(s.list("/etc/modprobe.d"), vec!["a.conf"]);
        assert!(s.list("/root").is_empty());
    }
}
