//! Applying image layers onto a plain folder, in order, OCI whiteouts honoured: what a running
//! container or a booted node sees. `--format chroot` and `imgbuild boot` both use it.

use std::io::BufReader;
use std::path::Path;

use engine::archive::{ArchiveError, Limits, Whiteouts};
use engine::rootfs::RootFs;

use crate::compression::Compression;

/// Why a layer could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Its file could not be opened or decompressed.
    #[error(transparent)]
    Io(std::io::Error),
    /// Its tar could not be extracted (an unsafe entry, a broken tar).
    #[error(transparent)]
    Extract(ArchiveError),
}

/// Applies the layer file `path`, compressed as `compression`, onto `fs` at `/`: devices kept,
/// whiteouts applied.
pub fn apply_layer(fs: &RootFs, path: &Path, compression: Compression) -> Result<(), ApplyError> {
    let file = std::fs::File::open(path).map_err(ApplyError::Io)?;
    let reader = compression
        .reader(BufReader::with_capacity(1 << 20, file))
        .map_err(ApplyError::Io)?;
    let limits = Limits {
        allow_devices: true,
        whiteouts: Whiteouts::Apply,
        ..Limits::default()
    };
    engine::archive::extract_tar(reader, fs, Path::new("/"), limits)
        .map_err(ApplyError::Extract)?;
    Ok(())
}
