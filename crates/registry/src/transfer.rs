//! Pulling an image (manifest lists resolved to linux/amd64, every blob verified) and pushing
//! one (only the blobs the registry lacks, then the manifest).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use oci_spec::image::{Arch, Descriptor, ImageIndex, ImageManifest, Os};
use serde_json::Value as Json;
use sha2::{Digest, Sha256};

use crate::auth::Credentials;
use crate::client::{Body, Client};
use crate::error::{io, RegistryError};
use crate::reference::Reference;

pub(crate) const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub(crate) const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// A layer of a pulled image, stored and verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PulledLayer {
    /// Its digest (of the bytes as stored, usually compressed).
    pub digest: String,
    /// Its media type (gzip, zstd or plain tar).
    pub media_type: String,
    /// The stored blob.
    pub path: PathBuf,
}

/// A pulled image.
#[derive(Debug, Clone)]
pub struct PulledImage {
    /// The digest of the platform manifest.
    pub manifest_digest: String,
    /// The image config.
    pub config: Json,
    /// The layers, bottom first.
    pub layers: Vec<PulledLayer>,
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

fn invalid(what: &str, detail: impl Into<String>) -> RegistryError {
    RegistryError::Invalid {
        what: what.to_owned(),
        detail: detail.into(),
    }
}

/// Fetches a manifest; when `expected` is a digest, the bytes must hash to it.
pub(crate) fn get_manifest(
    client: &Client,
    target: &str,
    expected: Option<&str>,
) -> Result<(Vec<u8>, String), RegistryError> {
    let accept = [OCI_INDEX, OCI_MANIFEST, DOCKER_LIST, DOCKER_MANIFEST].join(", ");
    let url = client.url(&format!("manifests/{target}"))?;
    let response = client.call("GET", &url, &[("Accept", &accept)], Body::Empty)?;
    let media_type = response
        .header("Content-Type")
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned();
    let mut bytes = Vec::new();
    response
        .into_reader()
        .take(4 << 20)
        .read_to_end(&mut bytes)
        .map_err(io(format!("reading {url}")))?;
    if let Some(expected) = expected {
        let actual = sha256_hex(&bytes);
        if actual != expected {
            return Err(RegistryError::DigestMismatch {
                what: url,
                expected: expected.to_owned(),
                actual,
            });
        }
    }
    Ok((bytes, media_type))
}

/// The linux/amd64 entry of an index or manifest list.
fn platform_manifest(index: &ImageIndex, what: &str) -> Result<String, RegistryError> {
    let amd64 = |d: &&Descriptor| {
        d.platform()
            .as_ref()
            .is_some_and(|p| p.os() == &Os::Linux && p.architecture() == &Arch::Amd64)
    };
    if let Some(found) = index.manifests().iter().find(amd64) {
        return Ok(found.digest().to_string());
    }
    let platforms: Vec<String> = index
        .manifests()
        .iter()
        .map(|m| match m.platform() {
            Some(p) => format!("{}/{}", p.os(), p.architecture()),
            None => "?/?".to_owned(),
        })
        .collect();
    Err(invalid(
        what,
        format!("no linux/amd64 image (it has {})", platforms.join(", ")),
    ))
}

/// The schema version a manifest declares (schema 1 has none of schema 2's fields).
#[derive(serde::Deserialize)]
struct Versioned {
    #[serde(rename = "schemaVersion")]
    schema_version: u32,
}

/// The image manifest in `bytes` (OCI or Docker v2 schema 2).
fn image_manifest(
    bytes: &[u8],
    media_type: &str,
    what: &str,
) -> Result<ImageManifest, RegistryError> {
    let versioned: Versioned = serde_json::from_slice(bytes).map_err(|e| {
        invalid(
            what,
            format!("manifest is not JSON with a schemaVersion: {e}"),
        )
    })?;
    if versioned.schema_version != 2 {
        return Err(invalid(
            what,
            format!("manifest schema {} ({media_type}) is not supported; only schema 2 (OCI or Docker v2)", versioned.schema_version),
        ));
    }
    ImageManifest::from_reader(bytes)
        .map_err(|e| invalid(what, format!("not an image manifest: {e}")))
}

/// Downloads blob `digest` to `dest` (through a temporary file), verifying its sha256.
pub(crate) fn get_blob(client: &Client, digest: &str, dest: &Path) -> Result<(), RegistryError> {
    let url = client.url(&format!("blobs/{digest}"))?;
    let response = client.call("GET", &url, &[], Body::Empty)?;
    let dir = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io("creating a blob file"))?;
    let mut hasher = Sha256::new();
    let mut reader = response.into_reader();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| RegistryError::Transport {
                what: format!("GET {url}"),
                detail: e.to_string(),
            })?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        tmp.write_all(&buf[..n]).map_err(io("writing a blob"))?;
    }
    let actual = format!("sha256:{:x}", hasher.finalize());
    if actual != digest {
        return Err(RegistryError::DigestMismatch {
            what: url,
            expected: digest.to_owned(),
            actual,
        });
    }
    tmp.persist(dest)
        .map_err(|e| io(format!("storing {}", dest.display()))(e.error))?;
    Ok(())
}

fn blob_path(dir: &Path, digest: &str) -> Result<PathBuf, RegistryError> {
    let digest = oci_layout::Digest::parse(digest)
        .and_then(oci_layout::Digest::sha256)
        .map_err(|_| invalid("manifest", format!("'{digest}' is not a sha256 digest")))?;
    Ok(digest.blob_path(dir))
}

/// Pulls `reference` (linux/amd64) into `blob_dir` (`sha256/<hex>` files; blobs already there
/// are not downloaded again: each was verified when it was stored).
pub fn pull(
    reference: &Reference,
    credentials: Option<Credentials>,
    blob_dir: &Path,
) -> Result<PulledImage, RegistryError> {
    let client = Client::new(reference, credentials, false);
    let what = reference.to_string();
    let (mut bytes, mut media_type) = get_manifest(
        &client,
        reference.target(),
        reference.digest.as_ref().map(oci_layout::Digest::as_str),
    )?;
    let mut manifest_digest = sha256_hex(&bytes);
    let index = match media_type.as_str() {
        OCI_INDEX | DOCKER_LIST => Some(
            ImageIndex::from_reader(&bytes[..])
                .map_err(|e| invalid(&what, format!("not an image index: {e}")))?,
        ),
        // A registry that names no media type: an index is what parses as one.
        _ => ImageIndex::from_reader(&bytes[..]).ok(),
    };
    if let Some(index) = index {
        let digest = platform_manifest(&index, &what)?;
        (bytes, media_type) = get_manifest(&client, &digest, Some(&digest))?;
        manifest_digest = digest;
    }
    let manifest = image_manifest(&bytes, &media_type, &what)?;
    let config_digest = manifest.config().digest().to_string();
    let config_digest = config_digest.as_str();
    let config_path = blob_path(blob_dir, config_digest)?;
    if !config_path.is_file() {
        get_blob(&client, config_digest, &config_path)?;
    }
    let config_bytes =
        std::fs::read(&config_path).map_err(io(format!("reading {}", config_path.display())))?;
    let config: Json = serde_json::from_slice(&config_bytes)
        .map_err(|e| invalid(&what, format!("config is not JSON: {e}")))?;
    let mut layers = Vec::new();
    for layer in manifest.layers() {
        let digest = layer.digest().to_string();
        let digest = digest.as_str();
        let media_type = layer.media_type().to_string();
        if media_type.contains("foreign") || media_type.contains("nondistributable") {
            return Err(invalid(
                &what,
                format!("layer {digest} is {media_type}, which must be fetched from elsewhere; not supported"),
            ));
        }
        let path = blob_path(blob_dir, digest)?;
        if !path.is_file() {
            get_blob(&client, digest, &path)?;
        }
        layers.push(PulledLayer {
            digest: digest.to_owned(),
            media_type,
            path,
        });
    }
    Ok(PulledImage {
        manifest_digest,
        config,
        layers,
    })
}

/// A blob to push: its digest and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushBlob {
    /// `sha256:...`.
    pub digest: String,
    /// The file.
    pub path: PathBuf,
}

/// What a push did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The manifest digest the registry reported.
    pub digest: String,
    /// Blobs uploaded.
    pub uploaded: usize,
    /// Blobs the registry already had.
    pub skipped: usize,
}

pub(crate) fn push_blob(client: &Client, blob: &PushBlob) -> Result<bool, RegistryError> {
    let head = client.url(&format!("blobs/{}", blob.digest))?;
    match client.call("HEAD", &head, &[], Body::Empty) {
        Ok(_) => return Ok(false),
        Err(RegistryError::Status { status: 404, .. }) => {}
        Err(e) => return Err(e),
    }
    // Ask the registry to mount the blob if it has it in a repository we may read; it answers
    // 201 when it did, else 202 with an upload session.
    let start = client.url(&format!("blobs/uploads/?mount={}", blob.digest))?;
    let response = client.call("POST", &start, &[], Body::Empty)?;
    if response.status() == 201 {
        return Ok(false);
    }
    let location = response
        .header("Location")
        .ok_or_else(|| invalid(&start, "the registry started an upload without a Location"))?;
    let location = client.absolute(location)?;
    let separator = if location.contains('?') { '&' } else { '?' };
    let put = format!("{location}{separator}digest={}", blob.digest);
    client.call(
        "PUT",
        &put,
        &[("Content-Type", "application/octet-stream")],
        Body::File(&blob.path),
    )?;
    Ok(true)
}

/// Pushes an image: every blob the registry lacks (monolithic uploads, mounts where the
/// registry offers them), then the manifest under the reference's tag.
pub fn push(
    reference: &Reference,
    credentials: Option<Credentials>,
    blobs: &[PushBlob],
    manifest: &[u8],
    media_type: &str,
) -> Result<Pushed, RegistryError> {
    let client = Client::new(reference, credentials, true);
    let mut uploaded = 0;
    for blob in blobs {
        if push_blob(&client, blob)? {
            uploaded += 1;
        }
    }
    let url = client.url(&format!("manifests/{}", reference.target()))?;
    let response = client.call(
        "PUT",
        &url,
        &[("Content-Type", media_type)],
        Body::Bytes(manifest),
    )?;
    let digest = sha256_hex(manifest);
    if let Some(reported) = response.header("Docker-Content-Digest") {
        if reported != digest {
            return Err(RegistryError::DigestMismatch {
                what: url,
                expected: digest,
                actual: reported.to_owned(),
            });
        }
    }
    Ok(Pushed {
        digest,
        uploaded,
        skipped: blobs.len() - uploaded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_linux_amd64_from_an_index() {
        let entry = |hex: char, arch: &str| serde_json::json!({"mediaType": OCI_MANIFEST, "size": 1, "digest": format!("sha256:{}", hex.to_string().repeat(64)), "platform": {"os": "linux", "architecture": arch}});
        let parse = |manifests: serde_json::Value| -> ImageIndex {
            let index = serde_json::json!({"schemaVersion": 2, "manifests": manifests});
            ImageIndex::from_reader(index.to_string().as_bytes()).expect("an index")
        };
        let both = parse(serde_json::json!([
            entry('a', "arm64"),
            entry('b', "amd64")
        ]));
        let found = platform_manifest(&both, "x").expect("found");
        assert_eq!(found, format!("sha256:{}", "b".repeat(64)));
        let arm_only = parse(serde_json::json!([entry('a', "arm64")]));
        let err = platform_manifest(&arm_only, "x").expect_err("none");
        assert!(err.to_string().contains("linux/arm64"), "{err}");
    }

    #[test]
    fn blob_paths_need_sha256_digests() {
        let dir = Path::new("/cache");
        assert!(blob_path(dir, "sha256:../../etc").is_err());
        assert!(blob_path(dir, &format!("sha256:{}", "a".repeat(64))).is_ok());
    }
}
