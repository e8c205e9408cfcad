//! What `imgbuild boot` is given, as a root folder: a rootfs folder as it is, or an image (an
//! `out/<image>` folder, or its OCI layout) unpacked layer by layer into a temporary folder.

use std::path::{Path, PathBuf};

use image::apply::{apply_layer, ApplyError};
use image::compression::Compression;
use serde_json::Value as Json;

use crate::error::BootError;

/// The root folder of `input`: the folder itself when it holds a rootfs, else `dest` with the
/// image's layers applied.
pub fn root_of(input: &Path, dest: &Path) -> Result<PathBuf, BootError> {
    if input.join("usr").is_dir() && input.join("etc").is_dir() {
        return Ok(input.to_owned());
    }
    let layout = Layout::of(input).ok_or_else(|| {
        BootError::Input(format!(
            "{}: neither a rootfs folder nor an image (an out/<image> folder or an OCI layout)",
            input.display()
        ))
    })?;
    layout.unpack(dest)?;
    Ok(dest.to_owned())
}

/// The units the image's recipe expects to fail when it is booted without its Warewulf
/// overlays (the `io.imgbuild.boot-expect-failed` label, comma-separated), when `input` is an
/// image; none for a rootfs folder.
pub fn expected_failures(input: &Path) -> Vec<String> {
    labels(input).boot_expect_failed
}

/// The image's labels, when `input` is an image; none for a rootfs folder.
pub fn labels(input: &Path) -> spec::ImageLabels {
    Layout::of(input)
        .and_then(|layout| layout.config().ok())
        .map(|config| spec::ImageLabels::of_config(&config))
        .unwrap_or_default()
}

/// Refuses an overlay with a folder where the image has a link (`lib` over a merged /usr's
/// `lib -> usr/lib`): the kernel replaces the link with the folder when it unpacks the
/// overlay, as it would at a node, and the image's programs no longer start.
pub fn check_overlay(root: &Path, overlay: &Path) -> Result<(), BootError> {
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let dir = overlay.join(&relative);
        let entries = std::fs::read_dir(&dir).map_err(|e| BootError::io(&dir, e))?;
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = relative.join(entry.file_name());
            let in_image = root.join(&path);
            if let Ok(target) = std::fs::read_link(&in_image) {
                return Err(BootError::Input(format!(
                    "--overlay {}: {} is a folder in the overlay but a link to {} in the image; unpacked after the image it would replace the link and the node would not start: put its files under the link's target",
                    overlay.display(),
                    path.display(),
                    target.display()
                )));
            }
            pending.push(path);
        }
    }
    Ok(())
}

/// An OCI image layout: `out/<image>/oci`, or the folder itself, read by the one image reader
/// ([`oci_layout::Source`]), which checks each digest before it names a blob.
struct Layout(PathBuf);

impl Layout {
    fn of(input: &Path) -> Option<Layout> {
        [input.join("oci"), input.to_owned()]
            .into_iter()
            .find(|dir| dir.join("index.json").is_file())
            .map(Layout)
    }

    /// The config and layers of the layout's first image.
    fn image(&self) -> Result<oci_layout::Image, BootError> {
        oci_layout::Source::folder(&self.0)
            .oci_image()
            .map_err(|e| {
                BootError::Input(format!(
                    "{}: not a readable OCI layout: {e}; build the image again, or boot its rootfs folder",
                    self.0.display()
                ))
            })
    }

    fn config(&self) -> Result<Json, BootError> {
        Ok(self.image()?.config)
    }

    /// Applies the layers of the first image, in order, with whiteouts.
    fn unpack(&self, dest: &Path) -> Result<(), BootError> {
        let image = self.image()?;
        std::fs::create_dir_all(dest).map_err(|e| BootError::io(dest, e))?;
        let fs = engine::rootfs::RootFs::plain(dest).map_err(|e| BootError::io(dest, e))?;
        for layer in &image.layers {
            let path = self.0.join(&layer.member);
            let compression =
                Compression::of_media_type(layer.media_type.as_deref().unwrap_or_default());
            apply_layer(&fs, &path, compression, layer.diff_id.as_deref()).map_err(
                |e| match e {
                    ApplyError::Io(e) => BootError::io(&path, e),
                    e => BootError::Input(format!("layer {}: {e}", layer.name)),
                },
            )?;
        }
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A layout whose one image's config carries `labels`, each blob named by its sha256.
    fn layout(labels: serde_json::Value) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let blobs = dir.path().join("oci/blobs/sha256");
        std::fs::create_dir_all(&blobs).expect("blobs");
        let write_blob = |json: serde_json::Value| {
            let bytes = json.to_string().into_bytes();
            let digest = image::hashing::digest_of(&bytes);
            let hex = digest.trim_start_matches("sha256:");
            std::fs::write(blobs.join(hex), &bytes).expect("blob");
            digest
        };
        let config = write_blob(serde_json::json!({"config": {"Labels": labels}}));
        let manifest = write_blob(serde_json::json!({
            "schemaVersion": 2,
            "config": {"digest": config, "size": 2, "mediaType": "application/vnd.oci.image.config.v1+json"},
            "layers": []
        }));
        let index = index_of(&manifest);
        std::fs::write(dir.path().join("oci/index.json"), index.to_string()).expect("index");
        dir
    }

    /// An index naming the one manifest `digest`.
    fn index_of(digest: &str) -> serde_json::Value {
        serde_json::json!({"schemaVersion": 2, "manifests": [
            {"digest": digest, "size": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json"}
        ]})
    }

    #[test]
    fn the_expected_failures_come_from_the_images_label() {
        let dir = layout(serde_json::json!({
            "io.imgbuild.boot-expect-failed": "munge.service, sssd-*.socket"
        }));
        assert_eq!(
            expected_failures(dir.path()),
            ["munge.service", "sssd-*.socket"]
        );
        assert_eq!(
            expected_failures(&dir.path().join("oci")),
            ["munge.service", "sssd-*.socket"]
        );
        assert!(expected_failures(layout(serde_json::json!({})).path()).is_empty());
        assert!(expected_failures(Path::new("/nonexistent")).is_empty());
    }

    #[test]
    fn an_overlay_folder_over_a_link_of_the_image_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("usr/lib/modules")).expect("image");
        std::os::unix::fs::symlink("usr/lib", root.join("lib")).expect("merged /usr");
        let overlay = dir.path().join("overlay");
        std::fs::create_dir_all(overlay.join("usr/lib/modules/6.1.0-50-amd64/extra"))
            .expect("overlay");
        check_overlay(&root, &overlay).expect("under usr/lib: fine");
        std::fs::create_dir_all(overlay.join("lib/modules")).expect("overlay");
        let error = check_overlay(&root, &overlay).expect_err("over the link");
        assert!(
            error
                .to_string()
                .contains("lib is a folder in the overlay but a link to usr/lib in the image"),
            "{error}"
        );
    }

    #[test]
    fn a_digest_that_leaves_the_layout_is_refused() {
        let dir = layout(serde_json::json!({}));
        let index = index_of("sha256:../../../etc/passwd");
        std::fs::write(dir.path().join("oci/index.json"), index.to_string()).expect("index");
        let dest = dir.path().join("rootfs");
        let error = root_of(dir.path(), &dest).expect_err("refused");
        // Refused as the index is read, before the digest names any file.
        let text = error.to_string();
        assert!(
            text.contains("index.json: Invalid encoded value ../../../etc/passwd"),
            "{text}"
        );
    }
}
