//! Applying image layers onto a plain folder, in order, OCI whiteouts honoured: what a running
//! container or a booted node sees. `--format chroot` and `imgbuild boot` both use it.

use std::io::BufReader;
use std::path::Path;

use engine::archive::{ArchiveError, Limits, Whiteouts};
use engine::rootfs::RootFs;

use crate::compression::Compression;
use crate::hashing::HashingReader;

/// Why a layer could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Its file could not be opened or decompressed.
    #[error(transparent)]
    Io(std::io::Error),
    /// Its tar could not be extracted (an unsafe entry, a broken tar).
    #[error(transparent)]
    Extract(ArchiveError),
    /// Its tar is not the one the image's config names.
    #[error("its tar is {found}, but the image's config says {expected} (rootfs.diff_ids): the blob is not the layer the image was made of")]
    DiffId {
        /// The config's diff_id.
        expected: String,
        /// The digest of the tar read.
        found: String,
    },
}

/// Applies the layer file `path`, compressed as `compression`, onto `fs` at `/`: devices kept,
/// whiteouts applied. Reads the whole stream (every frame or member, then the tar's end, where
/// only zero padding may follow); its digest must be `diff_id` where the config gives one.
pub fn apply_layer(
    fs: &RootFs,
    path: &Path,
    compression: Compression,
    diff_id: Option<&str>,
) -> Result<(), ApplyError> {
    let file = std::fs::File::open(path).map_err(ApplyError::Io)?;
    let reader = compression
        .reader(BufReader::with_capacity(1 << 20, file))
        .map_err(ApplyError::Io)?;
    let mut tar = HashingReader::new(reader);
    let limits = Limits {
        allow_devices: true,
        whiteouts: Whiteouts::Apply,
        ..Limits::default()
    };
    engine::archive::extract_tar(&mut tar, fs, Path::new("/"), limits)
        .map_err(ApplyError::Extract)?;
    oci_layout::decompress::check_tar_end(&mut tar).map_err(ApplyError::Io)?;
    let (found, _) = tar.finish().map_err(ApplyError::Io)?;
    match diff_id {
        Some(expected) if expected != found => Err(ApplyError::DiffId {
            expected: expected.to_owned(),
            found,
        }),
        _ => Ok(()),
    }
}
