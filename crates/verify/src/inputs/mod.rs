//! The images verify reads, each into a [`Snapshot`] in one streaming pass: a rootfs folder, a
//! Warewulf chroot (`.../chroots/<name>`, its `rootfs/`), the image file Warewulf provisions
//! (`<name>.img`, `<name>.img.gz`: a newc cpio, gzip, zstd or xz compressed), an OCI layout
//! folder, an `oci-archive` tar and a `docker-archive` tar (layers applied in order, whiteouts
//! honoured). Nothing is unpacked to disk.

mod archive;
mod cpio;
mod decompress;
mod layers;

use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::snapshot::Snapshot;
use decompress::decompressed;

pub use archive::Labels;

/// Why an image could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// Reading failed.
    #[error("{path}: {source}")]
    Io {
        /// The input.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The input is not an image verify knows.
    #[error("{path}: {what}")]
    NotAnImage {
        /// The input.
        path: String,
        /// What it is, and what verify reads.
        what: String,
    },
}

const KNOWN: &str = "give a rootfs folder, a Warewulf chroot or image (.img, .img.gz), an OCI layout, an oci-archive or docker-archive tar, or docker://REGISTRY/REPO:TAG";

/// Reads the image at `path` (a folder or a file), with its labels.
pub fn read(path: &Path) -> Result<(Snapshot, Labels), InputError> {
    let shown = path.display().to_string();
    let io = |source| InputError::Io {
        path: shown.clone(),
        source,
    };
    if path.is_dir() {
        if path.join("index.json").is_file() && path.join("oci-layout").is_file() {
            return archive::read_layout(path).map_err(io);
        }
        // A Warewulf chroot folder holds the image in rootfs/.
        let root = if path.join("rootfs/etc").is_dir() && !path.join("etc").is_dir() {
            path.join("rootfs")
        } else {
            path.to_path_buf()
        };
        if !root.join("etc").is_dir() && !root.join("usr").is_dir() {
            return Err(InputError::NotAnImage {
                path: shown,
                what: format!("a folder with no etc/ or usr/ is no image; {KNOWN}"),
            });
        }
        let snapshot = Snapshot::from_dir(&root).map_err(io)?;
        return Ok((snapshot, Labels::new()));
    }
    let file = std::fs::File::open(path).map_err(io)?;
    let mut stream =
        BufReader::with_capacity(1 << 20, decompressed(BufReader::new(file)).map_err(io)?);
    let head = stream.fill_buf().map_err(io)?;
    if head.starts_with(b"070701") || head.starts_with(b"070702") {
        let snapshot = cpio::read(stream).map_err(io)?;
        return Ok((snapshot, Labels::new()));
    }
    if head.len() > 262 && &head[257..262] == b"ustar" {
        return archive::read_tar(path).map_err(io);
    }
    Err(InputError::NotAnImage {
        path: shown,
        what: format!("neither a cpio nor a tar; {KNOWN}"),
    })
}

/// An image pulled from a registry: its layer blobs (bottom first) and its config.
pub fn read_pulled(
    layers: &[std::path::PathBuf],
    config: &serde_json::Value,
) -> Result<(Snapshot, Labels), InputError> {
    let mut snapshot = Snapshot::default();
    for layer in layers {
        let file = std::fs::File::open(layer).map_err(|source| InputError::Io {
            path: layer.display().to_string(),
            source,
        })?;
        layers::apply(&mut snapshot, file).map_err(|source| InputError::Io {
            path: layer.display().to_string(),
            source,
        })?;
    }
    Ok((snapshot, archive::labels_of(config)))
}
