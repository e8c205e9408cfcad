//! The newc cpio Warewulf provisions (`wwctl image build`), read as a stream.

use std::collections::BTreeMap;
use std::io::Read;

use crate::snapshot::Snapshot;

const S_IFMT: u32 = 0o170000;
const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;

fn bad(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("cpio: {what}"))
}

fn skip(reader: &mut impl Read, count: u64) -> std::io::Result<()> {
    std::io::copy(&mut reader.take(count), &mut std::io::sink())?;
    Ok(())
}

/// Padding that brings `offset` to a multiple of 4.
fn pad(offset: u64) -> u64 {
    (4 - offset % 4) % 4
}

/// Reads every entry of a newc archive into a snapshot. Hard links (`nlink > 1`) share the
/// data that GNU cpio writes with the last of them.
pub fn read(mut reader: impl Read) -> std::io::Result<Snapshot> {
    let mut snapshot = Snapshot::default();
    let mut linked: BTreeMap<(u32, u32), Vec<String>> = BTreeMap::new();
    let mut header = [0u8; 110];
    let mut offset: u64 = 0;
    loop {
        reader.read_exact(&mut header)?;
        if &header[..5] != b"07070" {
            return Err(bad("bad header magic"));
        }
        let field = |i: usize| -> std::io::Result<u32> {
            let text = std::str::from_utf8(&header[6 + i * 8..14 + i * 8])
                .map_err(|_| bad("header is not hex"))?;
            u32::from_str_radix(text, 16).map_err(|_| bad("header is not hex"))
        };
        let (ino, mode, nlink, dev_major) = (field(0)?, field(1)?, field(4)?, field(7)?);
        let size = u64::from(field(6)?);
        let name_size = u64::from(field(11)?);
        if name_size > 64 << 10 {
            return Err(bad("a name longer than 64 KiB: not a cpio archive"));
        }
        let mut name = vec![0u8; usize::try_from(name_size).map_err(|_| bad("name"))?];
        reader.read_exact(&mut name)?;
        offset += 110 + name_size;
        skip(&mut reader, pad(offset))?;
        offset += pad(offset);
        let name = String::from_utf8_lossy(name.strip_suffix(&[0]).unwrap_or(&name)).into_owned();
        if name == "TRAILER!!!" {
            return Ok(snapshot);
        }
        let path = format!("/{}", name.trim_start_matches("./").trim_start_matches('/'));
        let mut data = (&mut reader).take(size);
        match mode & S_IFMT {
            S_IFDIR => snapshot.add_dir(&path),
            S_IFLNK => {
                let mut target = String::new();
                data.read_to_string(&mut target)?;
                snapshot.add_symlink(&path, &target);
            }
            S_IFREG if nlink > 1 && size == 0 => {
                linked
                    .entry((dev_major, ino))
                    .or_default()
                    .push(path.clone());
                snapshot.add_file(&path, 0, None::<&[u8]>)?;
            }
            S_IFREG => {
                snapshot.add_file(&path, size, Some(&mut data))?;
                for earlier in linked.remove(&(dev_major, ino)).unwrap_or_default() {
                    snapshot.add_hardlink(&earlier, &path);
                }
            }
            _ => snapshot.add_other(&path),
        }
        skip(&mut data, u64::MAX)?;
        offset += size;
        skip(&mut reader, pad(offset))?;
        offset += pad(offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(out: &mut Vec<u8>, ino: u32, mode: u32, nlink: u32, name: &str, data: &[u8]) {
        let header = format!(
            "070701{ino:08x}{mode:08x}{:08x}{:08x}{nlink:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            0, 0, 0, data.len(), 0, 0, 0, 0, name.len() + 1, 0
        );
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
        out.extend_from_slice(data);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
    }

    #[test]
    fn reads_files_folders_links_and_hard_links() {
        let mut archive = Vec::new();
        entry(&mut archive, 1, S_IFDIR | 0o755, 2, "etc", b"");
        entry(
            &mut archive,
            2,
            S_IFREG | 0o644,
            1,
            "etc/modprobe.d/a.conf",
            b"alias a b\n",
        );
        entry(&mut archive, 3, S_IFLNK | 0o777, 1, "bin", b"usr/bin");
        entry(
            &mut archive,
            4,
            S_IFREG | 0o644,
            2,
            "etc/modprobe.d/first.conf",
            b"",
        );
        entry(
            &mut archive,
            4,
            S_IFREG | 0o644,
            2,
            "etc/modprobe.d/second.conf",
            b"install x y\n",
        );
        entry(&mut archive, 0, 0, 1, "TRAILER!!!", b"");
        let s = read(archive.as_slice()).expect("read");
        assert_eq!(
            s.read_text("/etc/modprobe.d/a.conf").as_deref(),
            Some("alias a b\n")
        );
        assert_eq!(
            s.read_text("/etc/modprobe.d/first.conf").as_deref(),
            Some("install x y\n")
        );
        assert_eq!(
            s.resolve("/bin"),
            None,
            "a link to a folder that is not there"
        );
        assert_eq!(s.list("/etc/modprobe.d").len(), 3);
    }

    #[test]
    fn a_cut_archive_is_an_error() {
        let mut archive = Vec::new();
        entry(&mut archive, 2, S_IFREG | 0o644, 1, "etc/x", b"abc");
        assert!(read(archive.as_slice()).is_err());
    }
}
