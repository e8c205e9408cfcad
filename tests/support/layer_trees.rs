//! What a build's layers hold, read from the layer cache's trees (each role's layer as the role
//! left it: an overlay's upper folder).

use std::path::Path;

use serde_json::Value;

/// A layer's copy of a file: the role whose layer it is, its size and its mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerFile {
    pub role: String,
    pub size: u64,
    pub mode: u32,
}

/// The layers of `built` (a `built` event) that hold `path` (relative to the image's root), in
/// the cache at `cache`, in the build's order.
pub fn layers_holding(cache: &Path, built: &Value, path: &str) -> Vec<LayerFile> {
    use std::os::unix::fs::PermissionsExt;
    let entries: Vec<(Value, std::path::PathBuf)> = std::fs::read_dir(cache.join("layers"))
        .expect("the layer cache")
        .flatten()
        .filter_map(|entry| {
            let bytes = std::fs::read(entry.path().join("entry.json")).ok()?;
            Some((serde_json::from_slice(&bytes).ok()?, entry.path()))
        })
        .collect();
    built["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .filter_map(|layer| {
            let meta = entries.iter().find_map(|(record, dir)| {
                (record["blob"]["digest"] == layer["digest"])
                    .then(|| dir.join("tree").join(path).symlink_metadata().ok())
                    .flatten()
            })?;
            Some(LayerFile {
                role: layer["role"].as_str()?.to_owned(),
                size: meta.len(),
                mode: meta.permissions().mode() & 0o7777,
            })
        })
        .collect()
}

/// The roles whose layer holds `path` with content (not an empty placeholder).
pub fn roles_whose_layer_holds(cache: &Path, built: &Value, path: &str) -> Vec<String> {
    layers_holding(cache, built, path)
        .into_iter()
        .filter(|file| file.size > 0)
        .map(|file| file.role)
        .collect()
}
