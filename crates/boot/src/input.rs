//! What `imgbuild boot` is given, as a root folder: a rootfs folder as it is, or an image (an
//! `out/<image>` folder, or its OCI layout) unpacked layer by layer into a temporary folder.

use std::io::BufReader;
use std::path::{Path, PathBuf};

use image::compression::Compression;
use serde_json::Value as Json;

use crate::BootError;

/// The root folder of `input`: the folder itself when it holds a rootfs, else `dest` with the
/// image's layers applied.
pub fn root_of(input: &Path, dest: &Path) -> Result<PathBuf, BootError> {
    if input.join("usr").is_dir() && input.join("etc").is_dir() {
        return Ok(input.to_owned());
    }
    let layout = [input.join("oci"), input.to_owned()]
        .into_iter()
        .find(|dir| dir.join("index.json").is_file())
        .ok_or_else(|| {
            BootError::Input(format!(
                "{}: neither a rootfs folder nor an image (an out/<image> folder or an OCI layout)",
                input.display()
            ))
        })?;
    unpack_layout(&layout, dest)?;
    Ok(dest.to_owned())
}

/// The units the image's recipe expects to fail when it is booted without its Warewulf
/// overlays (the `io.imgbuild.boot-expect-failed` label, comma-separated), when `input` is an
/// image; none for a rootfs folder.
pub fn expected_failures(input: &Path) -> Vec<String> {
    let Some(layout) = [input.join("oci"), input.to_owned()]
        .into_iter()
        .find(|dir| dir.join("index.json").is_file())
    else {
        return Vec::new();
    };
    let blob = |digest: &Json| {
        let digest = digest.as_str().unwrap_or_default();
        layout
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"))
    };
    let config = read_json(&layout.join("index.json"))
        .and_then(|index| read_json(&blob(&index["manifests"][0]["digest"])))
        .and_then(|manifest| read_json(&blob(&manifest["config"]["digest"])));
    config
        .ok()
        .and_then(|c| {
            c["config"]["Labels"]["io.imgbuild.boot-expect-failed"]
                .as_str()
                .map(str::to_owned)
        })
        .map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn read_json(path: &Path) -> Result<Json, BootError> {
    let text = std::fs::read(path).map_err(|e| BootError::io(path, e))?;
    serde_json::from_slice(&text)
        .map_err(|e| BootError::Input(format!("{}: not JSON: {e}", path.display())))
}

/// Applies the layers of the OCI layout's first image, in order, with whiteouts.
fn unpack_layout(layout: &Path, dest: &Path) -> Result<(), BootError> {
    let blob = |digest: &str| {
        layout
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"))
    };
    let index = read_json(&layout.join("index.json"))?;
    let manifest_digest = index["manifests"][0]["digest"].as_str().ok_or_else(|| {
        BootError::Input(format!("{}: index.json names no image", layout.display()))
    })?;
    let manifest = read_json(&blob(manifest_digest))?;
    std::fs::create_dir_all(dest).map_err(|e| BootError::io(dest, e))?;
    let fs = engine::rootfs::RootFs::plain(dest).map_err(|e| BootError::io(dest, e))?;
    for layer in manifest["layers"].as_array().into_iter().flatten() {
        let digest = layer["digest"].as_str().unwrap_or_default();
        let path = blob(digest);
        let file = std::fs::File::open(&path).map_err(|e| BootError::io(&path, e))?;
        let compression = Compression::of_media_type(layer["mediaType"].as_str().unwrap_or(""));
        let reader = compression
            .reader(BufReader::with_capacity(1 << 20, file))
            .map_err(|e| BootError::io(&path, e))?;
        let limits = engine::archive::Limits {
            allow_devices: true,
            whiteouts: true,
            ..engine::archive::Limits::default()
        };
        engine::archive::extract_tar(reader, &fs, Path::new("/"), limits)
            .map_err(|e| BootError::Input(format!("layer {digest}: {e}")))?;
    }
    Ok(())
}

/// The image's one kernel: `/boot/vmlinuz-<K>`.
pub fn kernel_of(root: &Path) -> Result<(String, PathBuf), BootError> {
    let boot = root.join("boot");
    let mut kernels: Vec<String> = std::fs::read_dir(&boot)
        .map_err(|_| {
            BootError::Input(format!(
                "{}: no /boot, so no kernel to boot",
                root.display()
            ))
        })?
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_prefix("vmlinuz-")
                .map(str::to_owned)
        })
        .collect();
    kernels.sort();
    match kernels.as_slice() {
        [one] => Ok((one.clone(), boot.join(format!("vmlinuz-{one}")))),
        [] => Err(BootError::Input(format!(
            "{}: no /boot/vmlinuz-*, so no kernel to boot",
            root.display()
        ))),
        many => Err(BootError::Input(format!(
            "{}: {} kernels ({}); an image boots one",
            root.display(),
            many.len(),
            many.join(", ")
        ))),
    }
}
