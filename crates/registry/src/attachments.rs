//! Writing a signature as cosign attaches it: the manifest tagged `sha256-<hex>.sig` in the
//! image's repository, one layer a signed payload with its signature as an annotation. A layer
//! is added to the signatures already there (another signer's stay).

use serde_json::Value as Json;

use crate::transfer::sha256_hex;
use crate::{PushBlob, RegistryError, Repository};

/// A signature layer's media type.
const PAYLOAD_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation holding a layer's signature.
const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The manifest's media type.
const MANIFEST_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The config cosign gives a signature manifest.
const CONFIG: &[u8] =
    br#"{"architecture":"","os":"","config":{},"rootfs":{"type":"layers","diff_ids":[]}}"#;

/// Pushes `payload` and a manifest under `tag` holding it as a layer signed by `signature`
/// (base64), after the layers the tag already has.
pub(crate) fn attach(
    repository: &Repository,
    tag: &str,
    payload: &[u8],
    signature: &str,
) -> Result<(), RegistryError> {
    let staging = tempfile::tempdir().map_err(|e| RegistryError::Invalid {
        what: "a staging folder".into(),
        detail: e.to_string(),
    })?;
    for bytes in [payload, CONFIG] {
        let path = staging.path().join(sha256_hex(bytes).replace(':', "-"));
        std::fs::write(&path, bytes).map_err(|e| RegistryError::Invalid {
            what: "a staged blob".into(),
            detail: e.to_string(),
        })?;
        let blob = PushBlob {
            digest: sha256_hex(bytes),
            path,
        };
        repository.push_blob(&blob)?;
    }
    let layer = serde_json::json!({
        "mediaType": PAYLOAD_TYPE,
        "digest": sha256_hex(payload),
        "size": payload.len(),
        "annotations": {SIGNATURE_ANNOTATION: signature},
    });
    let mut layers: Vec<Json> = match repository.manifest(tag)? {
        Some(bytes) => serde_json::from_slice::<Json>(&bytes)
            .ok()
            .and_then(|m| m["layers"].as_array().cloned())
            .unwrap_or_default(),
        None => Vec::new(),
    };
    layers.retain(|l| l["digest"] != layer["digest"]);
    layers.push(layer);
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": sha256_hex(CONFIG), "size": CONFIG.len()},
        "layers": layers,
    })
    .to_string();
    repository.put_manifest(tag, manifest.as_bytes(), MANIFEST_TYPE)?;
    Ok(())
}
