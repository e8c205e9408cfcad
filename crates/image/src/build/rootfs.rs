//! Writing the layers into a plain folder (`--format chroot`).

use std::path::Path;

use super::error::{io, BuildError};
use crate::apply::{apply_layer, ApplyError};
use crate::blobs::BlobStore;
use crate::oci::{self, ImageSpec};

/// Applies the layers in order into a plain folder (`--format chroot`), through a temporary
/// folder and a rename.
pub fn write_rootfs(dest: &Path, blobs: &BlobStore, spec: &ImageSpec) -> Result<(), BuildError> {
    let parent = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io("creating the output folder"))?;
    let tmp = tempfile::Builder::new()
        .prefix(".rootfs-")
        .tempdir_in(parent)
        .map_err(io("creating the rootfs folder"))?;
    let fs = engine::rootfs::RootFs::plain(tmp.path()).map_err(io("opening the rootfs folder"))?;
    for (layer, _) in &spec.layers {
        let blob = blobs.path(&layer.digest).map_err(io("reading a layer"))?;
        let diff_id = Some(layer.diff_id.as_str());
        apply_layer(&fs, &blob, layer.compression, diff_id).map_err(|e| match e {
            ApplyError::Io(cause) => io("reading a layer")(cause),
            e => BuildError::Layer {
                digest: layer.digest.clone(),
                message: e.to_string(),
            },
        })?;
    }
    let kept = tmp.keep();
    std::fs::set_permissions(&kept, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .map_err(io("the rootfs folder"))?;
    oci::replace(&kept, dest).map_err(io(format!("writing {}", dest.display())))
}
