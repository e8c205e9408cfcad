//! `sigstoreSigned`: the signatures cosign and podman attach to an image, an OCI manifest tagged
//! `sha256-<hex>.sig` in the image's repository, one layer a signature: the layer is the simple
//! signing payload, its `dev.cosignproject.cosign/signature` annotation the ECDSA P-256
//! signature of it (base64 DER). One must verify with the policy's public keys and name the
//! manifest's digest and an identity the policy accepts. Read only where `registries.d` sets
//! `use-sigstore-attachments`, as containers/image reads them. The same format signs what
//! `build --push` pushes with a sigstore key (`signer.rs`).

use base64::Engine;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;
use serde_json::Value as Json;

use crate::identity::{claims, Identity};
use crate::{Credentials, Reference, Repository};

/// The annotation holding a layer's signature.
const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// Payloads are small; a larger layer is not one.
const PAYLOAD_LIMIT: u64 = 1 << 20;

/// The public keys (PEM) of a `sigstoreSigned` requirement.
pub(crate) fn keys(pems: &[Vec<u8>]) -> Result<Vec<VerifyingKey>, String> {
    pems.iter()
        .enumerate()
        .map(|(i, pem)| {
            let text = std::str::from_utf8(pem).map_err(|_| format!("key {i} is not PEM text"))?;
            VerifyingKey::from_public_key_pem(text)
                .map_err(|e| format!("key {i} is not an ECDSA P-256 public key (PEM): {e}"))
        })
        .collect()
}

/// Ok when one of the signatures attached to the image verifies with `keys`, names `digest`
/// and an identity `identity` accepts.
pub(crate) fn signed(
    reference: &Reference,
    digest: &str,
    keys: &[VerifyingKey],
    identity: &Identity,
) -> Result<(), String> {
    if !crate::lookaside::uses_sigstore_attachments(reference)? {
        return Err(format!(
            "it requires a sigstore signature, and registries.d does not set use-sigstore-attachments: true for {}/{}",
            reference.registry, reference.repository
        ));
    }
    let credentials = Credentials::for_reference(&reference.registry, &reference.repository)
        .map_err(|e| e.to_string())?;
    let repository = Repository::open(reference, credentials, false);
    let tag = format!("{}.sig", digest.replace(':', "-"));
    let Some(manifest) = repository.manifest(&tag).map_err(|e| e.to_string())? else {
        return Err(format!(
            "it requires a sigstore signature, and {} has no {tag}",
            repository.name()
        ));
    };
    let manifest: Json =
        serde_json::from_slice(&manifest).map_err(|e| format!("{tag} is not JSON: {e}"))?;
    let mut why = Vec::new();
    let layers = manifest["layers"].as_array().into_iter().flatten();
    for (i, layer) in layers.enumerate() {
        let checked = one(&repository, layer, keys)
            .and_then(|payload| claims(&payload, digest, reference, identity));
        match checked {
            Ok(()) => return Ok(()),
            Err(e) => why.push(format!("{tag} layer {i}: {e}")),
        }
    }
    if why.is_empty() {
        return Err(format!("{tag} holds no signature"));
    }
    Err(format!("no signature holds: {}", why.join("; ")))
}

/// The payload of one signature layer, when a key of `keys` signed it.
fn one(repository: &Repository, layer: &Json, keys: &[VerifyingKey]) -> Result<Vec<u8>, String> {
    let encoded = layer["annotations"][SIGNATURE_ANNOTATION]
        .as_str()
        .ok_or("it has no signature annotation")?;
    let der = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("its signature is not base64: {e}"))?;
    let signature =
        Signature::from_der(&der).map_err(|e| format!("not an ECDSA signature: {e}"))?;
    let digest = layer["digest"].as_str().ok_or("it names no payload")?;
    let payload = repository
        .blob_bytes(digest, PAYLOAD_LIMIT)
        .map_err(|e| e.to_string())?;
    if keys
        .iter()
        .any(|key| key.verify(&payload, &signature).is_ok())
    {
        Ok(payload)
    } else {
        Err("not signed by a key of the policy".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_p256_public_keys_in_pem() {
        let pem = b"-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8t/z4rdHtRXETKb3cEDuOMLRQ14e\n387zyHPX/ft6HJHRzeTDacKZ3Ch5PSMxyUSGGmxiokwi/2RM9pHm3tilSw==\n-----END PUBLIC KEY-----\n";
        assert_eq!(keys(&[pem.to_vec()]).expect("a key").len(), 1);
        let err = keys(&[b"not a key".to_vec()]).expect_err("refused");
        assert!(err.contains("not an ECDSA P-256 public key"), "{err}");
    }
}
