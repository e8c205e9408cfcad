//! The image's files, read once for verify and the SBOM: from its staged rootfs when a build
//! wrote one (`--format chroot`, `--squash`), else from the folders the layer cache keeps each
//! layer's files in (nothing unpacked again), else from its layer blobs, streamed.

use std::path::{Path, PathBuf};

use super::error::{io, BuildError};
use crate::blobs::{BlobStore, LayerBlob};

/// Reads the image's files into verify's snapshot: the staged rootfs `rootfs` when it is
/// there, else the `trees` of its `layers` (bottom first), else the layers' blobs.
pub(super) fn read(
    blobs: &BlobStore,
    rootfs: &Path,
    layers: &[(LayerBlob, String)],
    trees: &[PathBuf],
) -> Result<verify::Snapshot, BuildError> {
    if rootfs.is_dir() {
        return verify::Snapshot::from_dir(rootfs).map_err(io("reading the image's rootfs"));
    }
    let every_tree = trees.len() == layers.len() && trees.iter().all(|tree| tree.is_dir());
    if every_tree {
        return verify::Snapshot::from_layer_dirs(trees)
            .map_err(io("reading the image's layers from the layer cache"));
    }
    let layers = layers
        .iter()
        .map(|(layer, _)| blobs.path(&layer.digest))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(io("finding the image's layers"))?;
    let (snapshot, _) = verify::inputs::read_pulled(&layers, &serde_json::Value::Null)
        .map_err(|e| BuildError::Output(format!("reading the image's layers: {e}")))?;
    Ok(snapshot)
}
