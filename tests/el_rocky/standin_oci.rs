//! The stand-in Rocky root as an OCI layout folder (one uncompressed layer, a deterministic
//! tar), which a recipe names with `bootstrap: oci`; made once per stand-in root and cached.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::common::test_cache;

fn sha256_file(path: &Path) -> (String, u64) {
    let mut file = std::fs::File::open(path).expect("open");
    let mut digest = Sha256::new();
    let size = std::io::copy(&mut file, &mut digest).expect("hash");
    (format!("{:x}", digest.finalize()), size)
}

fn write_blob(blobs: &Path, bytes: &[u8]) -> (String, u64) {
    let hex = format!("{:x}", Sha256::digest(bytes));
    std::fs::write(blobs.join(&hex), bytes).expect("blob");
    (hex, bytes.len() as u64)
}

/// The OCI layout of the stand-in root `root` (cached beside it by its folder name).
pub fn layout(root: &Path) -> PathBuf {
    let name = root.file_name().expect("name").to_string_lossy();
    let cached = test_cache().join(format!("{name}-oci"));
    if cached.join("index.json").is_file() {
        return cached;
    }
    let work = test_cache().join(format!("{name}-oci.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let blobs = work.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).expect("blobs");
    let tar = work.join("layer.tar");
    let status = Command::new("tar")
        .args([
            "--sort=name",
            "--mtime=@1700000000",
            "--numeric-owner",
            "--xattrs",
        ])
        .arg("-C")
        .arg(root)
        .arg("-cf")
        .arg(&tar)
        .args(["--exclude=./observed", "."])
        .status()
        .expect("tar");
    assert!(status.success(), "tar of the stand-in root");
    let (layer, layer_size) = sha256_file(&tar);
    std::fs::rename(&tar, blobs.join(&layer)).expect("layer blob");
    let config = serde_json::json!({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [format!("sha256:{layer}")]},
        "history": [{"created_by": "imgbuild test: the stand-in Rocky 9.5 root (bookworm, not Rocky)"}]
    });
    let (config, config_size) = write_blob(&blobs, config.to_string().as_bytes());
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": format!("sha256:{config}"), "size": config_size},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": format!("sha256:{layer}"), "size": layer_size}]
    });
    let (manifest, manifest_size) = write_blob(&blobs, manifest.to_string().as_bytes());
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": format!("sha256:{manifest}"), "size": manifest_size}]
    });
    std::fs::write(work.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#)
        .expect("oci-layout");
    std::fs::write(work.join("index.json"), index.to_string()).expect("index");
    let _ = std::fs::remove_dir_all(&cached);
    std::fs::rename(&work, &cached).expect("cache the layout");
    cached
}
