//! The image's SBOM (`sbom.cdx.json`, CycloneDX 1.5) beside the outputs: what `imgbuild sbom`
//! reads from the image, and the `mirror.lock` pins of what the plan downloads.

use std::path::{Path, PathBuf};

use planner::Plan;

use super::error::{io, BuildError};
use super::finish::Image;
use super::settings::Settings;
use crate::blobs::BlobStore;

/// Writes `out/<image>/sbom.cdx.json` (unless it is already that of this manifest).
pub(super) fn write(
    plan: &Plan,
    settings: &Settings,
    blobs: &BlobStore,
    image: &Image,
) -> Result<PathBuf, BuildError> {
    let path = image.dir.join(sbom::FILE_NAME);
    let manifest = &image.written.manifest;
    if crate::freshness::output_current(&image.dir, &path, &path, manifest) {
        return Ok(path);
    }
    let snapshot = snapshot(blobs, image)?;
    let inputs = sbom::Inputs {
        name: plan.image.clone(),
        labels: image.spec.labels.clone(),
        downloads: downloads(plan, &settings.project_root)?,
    };
    let bom = sbom::build(&snapshot, &inputs);
    let bytes = sbom::to_bytes(&bom).map_err(|e| BuildError::Output(e.to_string()))?;
    let partial = image.dir.join(format!(".{}.partial", sbom::FILE_NAME));
    std::fs::write(&partial, &bytes).map_err(io(format!("writing {}", partial.display())))?;
    std::fs::rename(&partial, &path).map_err(io(format!("writing {}", path.display())))?;
    crate::freshness::record_output(&image.dir, &path, &path, manifest)
        .map_err(io("recording the outputs"))?;
    Ok(path)
}

/// The image's files: its staged rootfs when there is one, else its layers streamed.
fn snapshot(blobs: &BlobStore, image: &Image) -> Result<verify::Snapshot, BuildError> {
    if image.staged_rootfs.is_dir() {
        return verify::Snapshot::from_dir(&image.staged_rootfs)
            .map_err(io("reading the image for its SBOM"));
    }
    let layers = image
        .spec
        .layers
        .iter()
        .map(|(layer, _)| blobs.path(&layer.digest))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(io("finding the image's layers for its SBOM"))?;
    let (snapshot, _) = verify::inputs::read_pulled(&layers, &serde_json::Value::Null)
        .map_err(|e| BuildError::Output(format!("reading the image for its SBOM: {e}")))?;
    Ok(snapshot)
}

/// The `mirror.lock` pins of the URLs the plan downloads (those it knows at plan time).
fn downloads(plan: &Plan, project_root: &Path) -> Result<Vec<sbom::Download>, BuildError> {
    let lock = mirror::Lock::load(&project_root.join("mirror.lock"))
        .map_err(|e| BuildError::Output(e.to_string()))?;
    Ok(plan
        .downloads()
        .into_iter()
        .filter_map(|(url, _)| {
            let pin = lock.get(&url)?;
            Some(sbom::Download {
                path: mirror::url_path(&url),
                size: pin.size,
                sha256: pin.sha256.clone(),
            })
        })
        .collect())
}
