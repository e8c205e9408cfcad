//! An image layer (a tar) applied onto a snapshot, OCI whiteouts honoured.

use std::io::{BufReader, Read};

use oci_layout::Whiteout;

use crate::snapshot::Snapshot;

/// Applies the layer tar `reader` (compressed or not) onto `snapshot`.
pub fn apply(snapshot: &mut Snapshot, reader: impl Read) -> std::io::Result<()> {
    snapshot.next_layer();
    let mut archive = tar::Archive::new(super::decompress::decompressed(BufReader::new(reader))?);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let raw = entry.path()?.to_string_lossy().into_owned();
        let path = format!("/{}", raw.trim_start_matches("./").trim_start_matches('/'));
        let path = path.trim_end_matches('/').to_owned();
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
        match Whiteout::of(name) {
            Whiteout::Opaque => {
                snapshot.make_opaque(if dir.is_empty() { "/" } else { dir });
                continue;
            }
            Whiteout::Hides(hidden) => {
                snapshot.remove(&format!("{dir}/{hidden}"));
                continue;
            }
            Whiteout::None => {}
        }
        let header = entry.header();
        let kind = header.entry_type();
        let link = || -> std::io::Result<String> {
            Ok(header
                .link_name()?
                .map(|l| l.to_string_lossy().into_owned())
                .unwrap_or_default())
        };
        if kind.is_dir() {
            snapshot.add_dir(&path);
        } else if kind.is_symlink() {
            let target = link()?;
            snapshot.add_symlink(&path, &target);
        } else if kind.is_hard_link() {
            let target = link()?;
            snapshot.add_hardlink(&path, &format!("/{}", target.trim_start_matches("./")));
        } else if kind.is_file() || kind == tar::EntryType::Continuous {
            let size = entry.size();
            snapshot.add_file(&path, size, Some(&mut entry))?;
        } else {
            snapshot.add_other(&path);
        }
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
