//! The image's SBOM (`sbom.cdx.json`, CycloneDX 1.5) beside the outputs: what `imgbuild sbom`
//! reads from the image (the files verify read), and the `mirror.lock` pins of what the plan
//! downloads.

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
    files: Option<verify::Snapshot>,
) -> Result<PathBuf, BuildError> {
    let path = image.dir.join(sbom::FILE_NAME);
    let manifest = &image.written.manifest;
    if crate::freshness::output_current(&image.dir, &path, &path, manifest) {
        return Ok(path);
    }
    // The files verify read, or read now (verify kept an earlier report, or did not run).
    let snapshot = match files {
        Some(files) => files,
        None => super::files::read(
            blobs,
            &image.staged_rootfs,
            &image.spec.layers,
            &image.trees,
        )?,
    };
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
