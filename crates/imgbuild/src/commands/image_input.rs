//! The image a command reads (`verify`, `sbom`): a path verify knows, or a registry reference
//! pulled blob by blob.

use std::path::Path;

use anyhow::anyhow;
use verify::inputs::{InputError, Labels};
use verify::Snapshot;

use crate::Failure;

/// Reads the image `input` names: a path, or a registry reference pulled blob by blob (each
/// verified by digest) into the cache.
pub(super) fn read_image(input: &str) -> Result<(Snapshot, Labels), Failure> {
    if input.starts_with("docker://") {
        registry::Reference::parse(input).map_err(|e| Failure::Input(anyhow!("{input}: {e}")))?;
        let conf = registry::RegistriesConf::load().map_err(|e| Failure::Input(anyhow!(e)))?;
        let blobs = super::session::cache_dir().join("registry");
        let (pulled, _) = registry::pull_via(&conf, input, &blobs)
            .map_err(|e| Failure::Run(anyhow!("pulling {input}: {e}")))?;
        let layers: Vec<_> = pulled.layers.iter().map(|l| l.path.clone()).collect();
        return verify::inputs::read_pulled(&layers, &pulled.config)
            .map_err(|e| Failure::Run(anyhow!(e)));
    }
    let path = Path::new(input);
    if !path.exists() {
        return Err(Failure::Input(anyhow!(
            "{input}: no such file or folder; give a rootfs folder, a Warewulf chroot or image (.img, .img.gz), an OCI layout, an oci-archive or docker-archive tar, or docker://REGISTRY/REPO:TAG"
        )));
    }
    verify::inputs::read(path).map_err(|e| match e {
        InputError::NotAnImage { .. } => Failure::Input(anyhow!(e)),
        InputError::Io { .. } => Failure::Run(anyhow!("cannot read the image: {e}")),
    })
}
