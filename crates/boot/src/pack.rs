//! A folder packed as `wwctl image build` packs it: a newc cpio archive, compressed (gzip, or
//! zstd where the kernel unpacks it), streamed (memory does not grow with the image), leaving
//! out what `/etc/warewulf/excludes` names. Hard-linked files are written whole each time (larger, never wrong).

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use crate::excludes::Excludes;

/// What was packed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Packed {
    /// Entries written.
    pub entries: u64,
    /// Bytes of file content.
    pub bytes: u64,
}

/// Writes the tree at `root` as a newc archive to `out` (uncompressed; wrap `out` in a
/// compressor). Returns what it wrote.
pub fn pack_tree<W: Write>(
    root: &Path,
    out: W,
    excludes: &Excludes,
) -> std::io::Result<(W, Packed)> {
    let mut packer = Packer {
        root,
        excludes,
        ino: 0,
        packed: Packed::default(),
    };
    let out = packer.dir(Path::new(""), out)?;
    let out = cpio::newc::trailer(out)?;
    Ok((out, packer.packed))
}

/// Writes files given as (path in the archive, mode, bytes), plus the folders above them.
pub fn pack_files<W: Write>(files: &[(&str, u32, &[u8])], mut out: W) -> std::io::Result<W> {
    let mut ino = 1_000_000;
    let mut folders: Vec<String> = Vec::new();
    for (path, _, _) in files {
        let mut at = Path::new(path).parent();
        while let Some(dir) = at.filter(|d| !d.as_os_str().is_empty()) {
            folders.push(dir.to_string_lossy().into_owned());
            at = dir.parent();
        }
    }
    folders.sort();
    folders.dedup();
    for folder in folders {
        ino += 1;
        let header = cpio::newc::Builder::new(&folder)
            .ino(ino)
            .mode(0o040755)
            .nlink(2);
        out = header.write(out, 0).finish()?;
    }
    for (path, mode, bytes) in files {
        ino += 1;
        let header = cpio::newc::Builder::new(path).ino(ino).mode(*mode).nlink(1);
        let mut writer = header.write(out, bytes.len() as u32);
        writer.write_all(bytes)?;
        out = writer.finish()?;
    }
    cpio::newc::trailer(out)
}

/// How the initrd's archives are compressed: gzip, or zstd where the initrd must be small
/// (GRUB loads it below 1 GiB). The kernel reads both (`CONFIG_RD_GZIP`, `CONFIG_RD_ZSTD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// gzip, fastest level.
    Gzip,
    /// zstd level 3 (zstd's default), on every core: about a ninth larger than level 9, in
    /// a fifth of its time.
    Zstd,
    /// zstd level 9, on every core: for an initrd level 3 leaves too large.
    ZstdSmall,
}

impl Codec {
    /// The codec of a boot without Secure Boot: zstd where the image's kernel unpacks it
    /// (`CONFIG_RD_ZSTD=y` in its `/boot/config-<kernel>`): packed in about a third of gzip's
    /// time, smaller, and unpacked faster by the emulated CPU; gzip otherwise (Rocky 8's 4.18
    /// kernel has no zstd initramfs), and when the image has no kernel config to say.
    pub fn for_kernel(root: &Path, kernel: &str) -> Self {
        let config = root.join("boot").join(format!("config-{kernel}"));
        let unpacks_zstd = std::fs::read_to_string(config)
            .is_ok_and(|text| text.lines().any(|line| line.trim() == "CONFIG_RD_ZSTD=y"));
        if unpacks_zstd {
            Codec::Zstd
        } else {
            Codec::Gzip
        }
    }
}

/// One compressed member of the initrd.
pub enum Encoder<W: Write> {
    /// gzip.
    Gzip(flate2::write::GzEncoder<W>),
    /// zstd.
    Zstd(zstd::stream::write::Encoder<'static, W>),
}

impl<W: Write> Encoder<W> {
    /// A member written to `out`.
    pub fn new(codec: Codec, out: W) -> std::io::Result<Self> {
        Ok(match codec {
            Codec::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(
                out,
                flate2::Compression::fast(),
            )),
            Codec::Zstd | Codec::ZstdSmall => {
                let level = if codec == Codec::Zstd { 3 } else { 9 };
                let mut encoder = zstd::stream::write::Encoder::new(out, level)?;
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                encoder.multithread(u32::try_from(cores).unwrap_or(1))?;
                Encoder::Zstd(encoder)
            }
        })
    }

    /// Ends the member; returns what it was written to.
    pub fn finish(self) -> std::io::Result<W> {
        match self {
            Encoder::Gzip(encoder) => encoder.finish(),
            Encoder::Zstd(encoder) => encoder.finish(),
        }
    }
}

impl<W: Write> Write for Encoder<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self {
            Encoder::Gzip(encoder) => encoder.write(bytes),
            Encoder::Zstd(encoder) => encoder.write(bytes),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Encoder::Gzip(encoder) => encoder.flush(),
            Encoder::Zstd(encoder) => encoder.flush(),
        }
    }
}

struct Packer<'a> {
    root: &'a Path,
    excludes: &'a Excludes,
    ino: u32,
    packed: Packed,
}

impl Packer<'_> {
    fn dir<W: Write>(&mut self, relative: &Path, mut out: W) -> std::io::Result<W> {
        let mut names: Vec<_> = std::fs::read_dir(self.root.join(relative))?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()?;
        names.sort();
        for name in names {
            let path = relative.join(&name);
            if self.excludes.excludes(&format!("/{}", path.display())) {
                continue;
            }
            out = self.entry(&path, out)?;
        }
        Ok(out)
    }

    fn entry<W: Write>(&mut self, path: &Path, out: W) -> std::io::Result<W> {
        let full = self.root.join(path);
        let meta = std::fs::symlink_metadata(&full)?;
        self.ino += 1;
        self.packed.entries += 1;
        let kind = meta.file_type();
        let header = cpio::newc::Builder::new(&path.to_string_lossy())
            .ino(self.ino)
            .mode(meta.mode())
            .uid(meta.uid())
            .gid(meta.gid())
            .mtime(u32::try_from(meta.mtime().max(0)).unwrap_or(u32::MAX))
            .nlink(if kind.is_dir() { 2 } else { 1 })
            .rdev_major(major(meta.rdev()))
            .rdev_minor(minor(meta.rdev()));
        if kind.is_dir() {
            let out = header.write(out, 0).finish()?;
            return self.dir(path, out);
        }
        if kind.is_symlink() {
            let target = std::fs::read_link(&full)?;
            let target = target.as_os_str().as_encoded_bytes();
            let mut writer = header.write(out, target.len() as u32);
            writer.write_all(target)?;
            return writer.finish();
        }
        if kind.is_file() {
            let size = u32::try_from(meta.len()).map_err(|_| {
                std::io::Error::other(format!(
                    "{}: 4 GiB or more, which newc cannot hold",
                    path.display()
                ))
            })?;
            let mut writer = header.write(out, size);
            let copied = std::io::copy(&mut std::fs::File::open(&full)?, &mut writer)?;
            self.packed.bytes += copied;
            return writer.finish();
        }
        if kind.is_char_device() || kind.is_block_device() || kind.is_fifo() || kind.is_socket() {
            return header.write(out, 0).finish();
        }
        Ok(out)
    }
}

fn major(dev: u64) -> u32 {
    (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff)) as u32
}

fn minor(dev: u64) -> u32 {
    (((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_codecs_write_members_that_read_back() {
        let mut zstd = Encoder::new(Codec::Zstd, Vec::new()).expect("zstd");
        zstd.write_all(b"070701 archive").expect("write");
        let zstd = zstd.finish().expect("finish");
        assert_eq!(zstd[..4], [0x28, 0xb5, 0x2f, 0xfd]);
        assert_eq!(
            zstd::decode_all(&zstd[..]).expect("decode"),
            b"070701 archive"
        );
        let mut gzip = Encoder::new(Codec::Gzip, Vec::new()).expect("gzip");
        gzip.write_all(b"070701 archive").expect("write");
        assert_eq!(gzip.finish().expect("finish")[..2], [0x1f, 0x8b]);
    }

    #[test]
    fn zstd_only_for_a_kernel_whose_config_unpacks_it() {
        let cases = [
            ("6.1.0-50-amd64", None, Codec::Gzip),
            (
                "4.18.0-553.el8.x86_64",
                Some("CONFIG_RD_GZIP=y\n# CONFIG_RD_ZSTD is not set\n"),
                Codec::Gzip,
            ),
            (
                "6.1.0-51-amd64",
                Some("CONFIG_RD_GZIP=y\nCONFIG_RD_ZSTD=y\n"),
                Codec::Zstd,
            ),
        ];
        let root = tempfile::tempdir().expect("tempdir");
        let boot = root.path().join("boot");
        std::fs::create_dir_all(&boot).expect("boot");
        for (kernel, config, codec) in cases {
            if let Some(config) = config {
                std::fs::write(boot.join(format!("config-{kernel}")), config).expect("config");
            }
            assert_eq!(Codec::for_kernel(root.path(), kernel), codec, "{kernel}");
        }
    }

    #[test]
    fn the_small_zstd_level_packs_smaller_than_the_fast_one() {
        let text: String = (0..40_000u64)
            .map(|n| {
                format!(
                    "{} module-{} depends {}\n",
                    n * 7919 % 10_007,
                    n % 97,
                    n % 13
                )
            })
            .collect();
        let packed = |codec| {
            let mut encoder = Encoder::new(codec, Vec::new()).expect("zstd");
            encoder.write_all(text.as_bytes()).expect("write");
            encoder.finish().expect("finish")
        };
        let (fast, small) = (packed(Codec::Zstd), packed(Codec::ZstdSmall));
        assert!(
            small.len() < fast.len(),
            "{} !< {}",
            small.len(),
            fast.len()
        );
        assert_eq!(
            zstd::decode_all(&small[..]).expect("decode"),
            text.as_bytes()
        );
    }

    #[test]
    fn a_tree_packs_into_a_newc_archive_that_reads_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("etc/warewulf")).expect("mkdir");
        std::fs::create_dir_all(root.join("usr/share/doc")).expect("mkdir");
        std::fs::write(root.join("etc/hostname"), "node\n").expect("file");
        std::fs::write(root.join("usr/share/doc/big"), "left out").expect("file");
        std::fs::write(root.join("etc/warewulf/excludes"), "/usr/share/doc\n").expect("file");
        std::os::unix::fs::symlink("hostname", root.join("etc/name")).expect("link");
        let (bytes, packed) =
            pack_tree(&root, Vec::new(), &Excludes::of_tree(&root)).expect("pack");
        assert_eq!(packed.bytes, 5 + "/usr/share/doc\n".len() as u64);
        let mut names = Vec::new();
        let mut reader = std::io::Cursor::new(bytes);
        loop {
            let entry = cpio::NewcReader::new(reader).expect("entry");
            if entry.entry().is_trailer() {
                break;
            }
            names.push(entry.entry().name().to_owned());
            reader = entry.finish().expect("next");
        }
        assert!(names.contains(&"etc/hostname".to_owned()), "{names:?}");
        assert!(names.contains(&"etc/name".to_owned()));
        assert!(
            !names.iter().any(|n| n.starts_with("usr/share/doc")),
            "{names:?}"
        );
    }
}
