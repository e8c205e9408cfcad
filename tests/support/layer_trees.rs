//! What a build's layers hold, read from the layer cache's trees (each role's layer as the role
//! left it: an overlay's upper folder).

use std::path::Path;

use serde_json::Value;

/// The roles of `built` (a `built` event) whose layer, in the cache at `cache`, holds `path`
/// (relative to the image's root), in the build's order.
pub fn roles_whose_layer_holds(cache: &Path, built: &Value, path: &str) -> Vec<String> {
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
        .filter(|layer| {
            entries.iter().any(|(record, dir)| {
                record["blob"]["digest"] == layer["digest"]
                    && dir.join("tree").join(path).symlink_metadata().is_ok()
            })
        })
        .filter_map(|layer| layer["role"].as_str().map(str::to_owned))
        .collect()
}
