//! Steps 3 to 5: the image (squashed when asked, then its config and manifest), verify on the
//! staged rootfs (or the report of an earlier run on the same manifest), and the build report,
//! which a failed verify turns into the build's error.

use std::path::PathBuf;
use std::time::Instant;

use planner::Plan;

use super::error::{io, BuildError};
use super::keys::labels;
use super::outcome::{BuildOnlyRemoval, BuildReport};
use super::room;
use super::rootfs::write_rootfs;
use super::settings::Settings;
use super::stack::Stack;
use crate::blobs::BlobStore;
use crate::layer::Source;
use crate::oci::{self, ImageSpec, Written};

/// The image as written to the blob store, and where its rootfs is staged.
pub(super) struct Image {
    /// Its layers and labels.
    pub spec: ImageSpec,
    /// Its config and manifest digests.
    pub written: Written,
    /// `out/<image>`.
    pub dir: PathBuf,
    /// The folder the rootfs is staged in (for verify and `--format chroot`).
    pub staged_rootfs: PathBuf,
    /// The staged rootfs is already written (a squashed build writes it first).
    pub staged: bool,
    /// The folder holding each layer's files in the layer cache, bottom first.
    pub trees: Vec<PathBuf>,
}

/// Step 3: the image's config and manifest, over one layer per role or, with `--squash`, one
/// layer holding the whole rootfs.
pub(super) fn image(
    plan: &Plan,
    settings: &Settings,
    blobs: &BlobStore,
    stack: &mut Stack,
) -> Result<Image, BuildError> {
    let mut spec = ImageSpec {
        layers: stack.layers.clone(),
        labels: labels(
            plan,
            &settings.project_root,
            settings.epoch,
            settings.module_signing.as_ref().map(|s| &s.cert),
        ),
        epoch: settings.epoch,
    };
    let dir = settings.out.join(&plan.image);
    std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?;
    let staged_rootfs = dir.join(format!(".rootfs-{}", std::process::id()));
    let mut staged = false;
    if settings.squash {
        room::ensure(&dir, room::unpacked_size(&spec), "the squashed rootfs")?;
        write_rootfs(&staged_rootfs, blobs, &spec)?;
        staged = true;
        let blob = blobs
            .write_layer(&staged_rootfs, Source::Tree, settings.epoch, settings.codec)
            .map_err(io("writing the squashed layer"))?;
        let roles = plan.roles.join(", ");
        spec.layers = vec![(blob, format!("imgbuild squashed: base, {roles}"))];
        stack.trees = vec![staged_rootfs.clone()];
    }
    let written =
        oci::write_image(blobs, &spec).map_err(io("writing the image config and manifest"))?;
    Ok(Image {
        spec,
        written,
        dir,
        staged_rootfs,
        staged,
        trees: stack.trees.clone(),
    })
}

/// Step 4: verify, with the expectations of the image's intent. An image with the same
/// manifest verified before with the same expectations keeps that report (verify reads files
/// only, and the manifest fixes every byte). The rootfs is staged only for `--format chroot`;
/// verify otherwise reads the layers' folders in the cache (`files`). Returns the report and
/// the files it read, for the SBOM.
pub(super) fn verify(
    plan: &Plan,
    settings: &Settings,
    blobs: &BlobStore,
    image: &Image,
) -> Result<(Option<verify::Report>, Option<verify::Snapshot>), BuildError> {
    // With a module-signing secret, modules_signed holds every out-of-tree module to its
    // certificate: an image whose modules it did not sign fails here.
    let signer = settings.module_signing.as_ref().map(|s| &s.cert);
    let expect = verify::Expect::of_labels(&super::keys::promised_labels(&plan.intent, signer));
    let verify_cache = crate::freshness::VerifyCache::new(&settings.cache_dir);
    let earlier = settings
        .verify
        .then(|| verify_cache.get(&image.written.manifest, &expect))
        .flatten();
    if !image.staged && settings.formats.chroot {
        let what = "the image's rootfs, unpacked for --format chroot";
        room::ensure(&image.dir, room::unpacked_size(&image.spec), what)?;
        write_rootfs(&image.staged_rootfs, blobs, &image.spec)?;
    }
    if earlier.is_some() || !settings.verify {
        return Ok((earlier, None));
    }
    let files = super::files::read(
        blobs,
        &image.staged_rootfs,
        &image.spec.layers,
        &image.trees,
    )?;
    let report = verify::verify(&files, &plan.image, &expect);
    verify_cache
        .put(&image.written.manifest, &expect, &report)
        .map_err(io("keeping the verify report"))?;
    Ok((Some(report), Some(files)))
}

/// Step 5: `report.json` and `report.md`, written whatever verify said; a failed verify is
/// the build's error, and no output is written.
/// What a build made, for its report.
pub(super) struct Made<'a> {
    pub image: &'a Image,
    pub stack: &'a Stack,
    pub verified: Option<&'a verify::Report>,
    pub build_only: Option<&'a BuildOnlyRemoval>,
}

pub(super) fn report(plan: &Plan, made: &Made, started: Instant) -> Result<(), BuildError> {
    let Made {
        image,
        stack,
        verified,
        build_only,
    } = *made;
    let pairs: Vec<(String, PathBuf)> = image
        .spec
        .layers
        .iter()
        .map(|(l, _)| l.digest.clone())
        .zip(stack.trees.iter().cloned())
        .collect();
    let interim = BuildReport {
        image: plan.image.clone(),
        manifest: image.written.manifest.clone(),
        config: image.written.config.clone(),
        layers: stack.reports.clone(),
        outputs: Vec::new(),
        seconds: started.elapsed().as_secs_f64(),
        after_roles: 0.0,
        verify: verified.cloned(),
        build_only: build_only.cloned(),
    };
    let intent = &plan.intent;
    let report = crate::report::assemble(
        &interim,
        &pairs,
        intent.kernel.clone(),
        (intent.mofed.clone(), intent.doca.clone()),
        intent.nvidia.clone(),
        verified.cloned(),
    );
    crate::report::write(&image.dir, &report).map_err(io("writing the build report"))?;
    let timeline = crate::timeline::svg(&[&report]);
    crate::atomic::write_file(&image.dir.join("timeline.svg"), timeline.as_bytes())
        .map_err(io("writing the timeline"))?;
    let Some(failed) = verified.filter(|v| !v.ok) else {
        return Ok(());
    };
    let _ = std::fs::remove_dir_all(&image.staged_rootfs);
    let lines: Vec<String> = failed
        .checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| format!("  {}: {}", c.id, c.detail))
        .collect();
    Err(BuildError::Verify(format!(
        "{}\n  (report: {})",
        lines.join("\n"),
        image.dir.join("report.md").display()
    )))
}
