//! Container images: an OCI layout folder, or an `oci-archive` / `docker-archive` tar read in
//! place (its members found by offset, then each layer streamed from the file), as
//! [`oci_layout::Source`] reads them.

use std::path::Path;

use oci_layout::Source;
use serde_json::Value as Json;

use super::layers;

/// The image's labels (`io.imgbuild.kernel`, ...): none for a rootfs or a Warewulf image.
pub type Labels = std::collections::BTreeMap<String, String>;
use crate::snapshot::Snapshot;

pub(super) fn labels_of(config: &Json) -> Labels {
    config["config"]["Labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// The image of `source`, its layers applied in order onto a snapshot.
fn read(source: &Source) -> std::io::Result<(Snapshot, Labels)> {
    let image = source.image()?;
    let mut snapshot = Snapshot::default();
    for layer in &image.layers {
        layers::apply(&mut snapshot, source.open(&layer.member)?).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("layer {}: {e}", layer.name),
            )
        })?;
    }
    Ok((snapshot, labels_of(&image.config)))
}

/// An OCI layout folder.
pub fn read_layout(path: &Path) -> std::io::Result<(Snapshot, Labels)> {
    read(&Source::folder(path))
}

/// An oci-archive or docker-archive tar.
pub fn read_tar(path: &Path) -> std::io::Result<(Snapshot, Labels)> {
    read(&Source::tar(path)?)
}
