//! Step 6: the outputs a verified image is written to: its SBOM and provenance, an OCI layout, the
//! docker-archive Warewulf imports, a plain rootfs folder. An output already holding this
//! manifest is left as it is.

use std::path::{Path, PathBuf};

use planner::Plan;

use super::archive_stream::ArchiveStream;
use super::error::{io, BuildError};
use super::finish::Image;
use super::room;
use super::settings::Settings;
use crate::blobs::BlobStore;
use crate::oci;

/// Where the docker-archive is written while the roles run: when it is an output, and of one
/// layer per role (a squashed image's one layer comes after the roles).
pub(super) fn streamed_archive(plan: &Plan, settings: &Settings) -> Option<PathBuf> {
    let (_, archive, _) = oci::output_paths(&settings.out, &plan.image);
    let wanted = settings.formats.docker_archive && !settings.squash;
    (wanted && oci::archive_path_ok(&archive)).then_some(archive)
}

/// Writes the outputs `settings` asks for (with the files verify read, for the SBOM, and the
/// docker-archive written while the roles ran, if one was); returns their paths.
pub(super) fn write(
    plan: &Plan,
    settings: &Settings,
    blobs: &BlobStore,
    image: &Image,
    (files, streamed): (Option<verify::Snapshot>, Option<ArchiveStream>),
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
    let sbom = super::sbom::write(plan, settings, blobs, image, files)?;
    let provenance = super::provenance::write(plan, settings, image, &sbom)?;
    let mut outputs = vec![sbom, provenance];
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
            let tag = format!("{}:latest", plan.image);
            let writing = || io(format!("writing {}", archive.display()));
            let done = match streamed {
                Some(stream) => stream
                    .finish(&archive, &image.spec, &image.written, &tag)
                    .map_err(writing())?,
                None => false,
            };
            if !done {
                let layers = room::compressed_size(&image.spec);
                room::ensure(&archive, layers, "the docker-archive")?;
                crate::docker_archive::write(&archive, blobs, &image.spec, &image.written, &tag)
                    .map_err(writing())?;
            }
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
