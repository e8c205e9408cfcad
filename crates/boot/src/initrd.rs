//! The initrd a boot starts from: the image as one compressed newc archive, each overlay as
//! another, then the probe's, in one file.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::BootError;
use crate::excludes::Excludes;
use crate::pack::{self, Codec, Encoder, Packed};
use crate::{input, probe};

/// The initrd of the image in `codec`; for Secure Boot (`None`), zstd, whose smaller archive GRUB
/// loads below 1 GiB (about 500 MB fit), packed again at a slower level when the fast one is
/// near that.
pub fn pack_initrd(
    root: &Path,
    overlays: &[PathBuf],
    initrd: &Path,
    codec: Option<Codec>,
) -> Result<Packed, BootError> {
    if let Some(codec) = codec {
        return write_initrd(root, overlays, initrd, codec);
    }
    let packed = write_initrd(root, overlays, initrd, Codec::Zstd)?;
    if std::fs::metadata(initrd).map_or(0, |m| m.len()) <= GRUB_ROOMY_INITRD {
        return Ok(packed);
    }
    write_initrd(root, overlays, initrd, Codec::ZstdSmall)
}

/// The image as a compressed newc archive, then the probe's archive, in one file (the kernel reads
/// concatenated archives in order, as Warewulf sends the image and its overlays).
fn write_initrd(
    root: &Path,
    overlays: &[PathBuf],
    path: &Path,
    codec: Codec,
) -> Result<Packed, BootError> {
    for overlay in overlays {
        input::check_overlay(root, overlay)?;
    }
    let file = std::fs::File::create(path).map_err(|e| BootError::io(path, e))?;
    // One compressed member per archive: the kernel unpacks each compressed archive whole, and
    // a member that ends inside a cpio entry is "junk at the end of compressed archive" (so
    // not pargz).
    let encoder = Encoder::new(codec, std::io::BufWriter::with_capacity(1 << 20, file))
        .map_err(|e| BootError::io(path, e))?;
    let (encoder, packed) = pack::pack_tree(root, encoder, &Excludes::of_tree(root))
        .map_err(|e| BootError::io(root, e))?;
    let mut out = encoder.finish().map_err(|e| BootError::io(path, e))?;
    for overlay in overlays {
        let encoder = Encoder::new(codec, out).map_err(|e| BootError::io(path, e))?;
        let (encoder, _) = pack::pack_tree(overlay, encoder, &Excludes::default())
            .map_err(|e| BootError::io(overlay, e))?;
        out = encoder.finish().map_err(|e| BootError::io(path, e))?;
    }
    let probe = probe::archive().map_err(|e| BootError::io(path, e))?;
    let mut encoder = Encoder::new(codec, out).map_err(|e| BootError::io(path, e))?;
    encoder
        .write_all(&probe)
        .map_err(|e| BootError::io(path, e))?;
    let mut out = encoder.finish().map_err(|e| BootError::io(path, e))?;
    out.flush().map_err(|e| BootError::io(path, e))?;
    Ok(packed)
}

/// The largest Secure Boot initrd packed at zstd's fast level and left so: Debian's signed GRUB
/// loads a 450 MB initrd and runs out of memory on a 650 MB one.
const GRUB_ROOMY_INITRD: u64 = 400 << 20;
