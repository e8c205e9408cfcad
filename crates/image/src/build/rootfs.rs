//! Writing the layers into a plain folder (`--format chroot`).

use std::path::Path;

use super::error::{io, BuildError};
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
        let file = std::fs::File::open(blobs.path(&layer.digest)).map_err(io("reading a layer"))?;
        let reader = layer
            .compression
            .reader(std::io::BufReader::with_capacity(1 << 20, file))
            .map_err(io("reading a layer"))?;
        let limits = engine::archive::Limits {
            allow_devices: true,
            whiteouts: engine::archive::Whiteouts::Apply,
            ..engine::archive::Limits::default()
        };
        engine::archive::extract_tar(reader, &fs, Path::new("/"), limits).map_err(|e| {
            BuildError::Layer {
                digest: layer.digest.clone(),
                message: e.to_string(),
            }
        })?;
    }
    let kept = tmp.keep();
    std::fs::set_permissions(&kept, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .map_err(io("the rootfs folder"))?;
    oci::replace(&kept, dest).map_err(io(format!("writing {}", dest.display())))
}
