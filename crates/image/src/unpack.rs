//! Reading an image back: a docker-archive tar or an OCI layout, its layers applied in order into
//! a folder (whiteouts honoured), and its labels.

use std::collections::BTreeMap;
use std::io::Read;

use crate::compression::Compression;
use std::path::Path;

use serde_json::Value as Json;

fn fail(message: impl Into<String>) -> std::io::Error {
    std::io::Error::other(message.into())
}

fn read_json(path: &Path) -> std::io::Result<Json> {
    serde_json::from_slice(&std::fs::read(path)?)
        .map_err(|e| fail(format!("{}: not JSON: {e}", path.display())))
}

fn apply(dest: &Path, layer: Box<dyn Read>, name: &str) -> std::io::Result<()> {
    let fs = engine::rootfs::RootFs::plain(dest)?;
    let limits = engine::archive::Limits {
        allow_devices: true,
        whiteouts: true,
        ..engine::archive::Limits::default()
    };
    engine::archive::extract_tar(layer, &fs, Path::new("/"), limits)
        .map_err(|e| fail(format!("layer {name}: {e}")))?;
    Ok(())
}

fn labels_of(config: &Json) -> BTreeMap<String, String> {
    config["config"]["Labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Unpacks `input` (an OCI layout folder or a docker-archive file) into the empty folder `dest`
/// and returns the image's labels.
pub fn unpack(input: &Path, dest: &Path) -> std::io::Result<BTreeMap<String, String>> {
    if input.join("index.json").is_file() {
        let blob = |d: &str| {
            input
                .join("blobs/sha256")
                .join(d.trim_start_matches("sha256:"))
        };
        let index = read_json(&input.join("index.json"))?;
        let manifest = read_json(&blob(
            index["manifests"][0]["digest"]
                .as_str()
                .ok_or_else(|| fail("index.json names no manifest"))?,
        ))?;
        let config = read_json(&blob(
            manifest["config"]["digest"]
                .as_str()
                .ok_or_else(|| fail("the manifest names no config"))?,
        ))?;
        for layer in manifest["layers"].as_array().cloned().unwrap_or_default() {
            let digest = layer["digest"]
                .as_str()
                .ok_or_else(|| fail("a layer without digest"))?;
            let file =
                std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(blob(digest))?);
            let media = layer["mediaType"].as_str().unwrap_or_default();
            let reader = Compression::of_media_type(media).reader(file)?;
            apply(dest, reader, digest)?;
        }
        return Ok(labels_of(&config));
    }
    let staging = tempfile::Builder::new()
        .prefix(".archive-")
        .tempdir_in(dest.parent().unwrap_or(Path::new(".")))?;
    tar::Archive::new(std::fs::File::open(input)?).unpack(staging.path())?;
    let manifest = read_json(&staging.path().join("manifest.json"))?;
    let config = read_json(
        &staging.path().join(
            manifest[0]["Config"]
                .as_str()
                .ok_or_else(|| fail("manifest.json names no config"))?,
        ),
    )?;
    for layer in manifest[0]["Layers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        let name = layer
            .as_str()
            .ok_or_else(|| fail("a layer that is not a path"))?;
        let mut file = std::io::BufReader::with_capacity(
            1 << 20,
            std::fs::File::open(staging.path().join(name))?,
        );
        let reader = Compression::sniff(&mut file)?.reader(file)?;
        apply(dest, reader, name)?;
    }
    Ok(labels_of(&config))
}
