//! Step 6: the outputs a verified image is written to: its SBOM, an OCI layout, the
//! docker-archive Warewulf imports, a plain rootfs folder. An output already holding this
//! manifest is left as it is.

use std::path::{Path, PathBuf};

use planner::Plan;

use super::error::{io, BuildError};
use super::finish::Image;
use super::room;
use super::settings::Settings;
use crate::blobs::BlobStore;
use crate::oci;

/// Writes the outputs `settings` asks for; returns their paths.
pub(super) fn write(
    plan: &Plan,
    settings: &Settings,
    blobs: &BlobStore,
    image: &Image,
    files: Option<verify::Snapshot>,
) -> Result<Vec<PathBuf>, BuildError> {
    let (oci_dir, archive, rootfs) = oci::output_paths(&settings.out, &plan.image);
    let manifest = &image.written.manifest;
    let current = |output: &Path, identity: &Path| {
        crate::freshness::output_current(&image.dir, output, identity, manifest)
    };
    let record = |output: &Path, identity: &Path| {
        crate::freshness::record_output(&image.dir, output, identity, manifest)
            .map_err(io("recording the outputs"))
    };
    // First: a chroot output takes the staged rootfs the SBOM may be read from.
    let mut outputs = vec![super::sbom::write(plan, settings, blobs, image, files)?];
    if settings.formats.oci {
        let index = oci_dir.join("index.json");
        if !current(&oci_dir, &index) {
            if !room::same_filesystem(&oci_dir, blobs.dir()) {
                let layers = room::compressed_size(&image.spec);
                room::ensure(&oci_dir, layers, "the OCI layout (a copy of the layers)")?;
            }
            oci::write_oci_layout(&oci_dir, blobs, &image.spec, &image.written, "latest")
                .map_err(io(format!("writing {}", oci_dir.display())))?;
            record(&oci_dir, &index)?;
        }
        outputs.push(oci_dir);
    }
    if settings.formats.docker_archive {
        if !oci::archive_path_ok(&archive) {
            return Err(BuildError::Output(format!("{}: a docker-archive path must not contain ':' (Warewulf reads it as file://); choose another --out", archive.display())));
        }
        if !current(&archive, &archive) {
            let layers = room::compressed_size(&image.spec);
            room::ensure(&archive, layers, "the docker-archive")?;
            oci::write_docker_archive(
                &archive,
                blobs,
                &image.spec,
                &image.written,
                &format!("{}:latest", plan.image),
            )
            .map_err(io(format!("writing {}", archive.display())))?;
            record(&archive, &archive)?;
        }
        outputs.push(archive);
    }
    if settings.formats.chroot {
        oci::replace(&image.staged_rootfs, &rootfs)
            .map_err(io(format!("writing {}", rootfs.display())))?;
        outputs.push(rootfs);
    } else {
        let _ = std::fs::remove_dir_all(&image.staged_rootfs);
    }
    Ok(outputs)
}
