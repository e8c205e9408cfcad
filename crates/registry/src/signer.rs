//! The site's image-signing key (`build --push --secret id=image-signing,src=KEY`): what was
//! pushed is signed as podman and skopeo sign it, so that their policies (and imgbuild's) can
//! require the key. An ECDSA P-256 key (PEM) makes a sigstore signature attached to the image
//! as cosign attaches it (`sha256-<hex>.sig`); an OpenPGP secret key (armored) makes a GPG
//! simple signing signature, written to the `lookaside-staging` folder `registries.d` names
//! for the repository, as `skopeo copy --sign-by` writes it. The key is never printed.

use std::path::Path;

use base64::Engine;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::Signature;

use crate::{Credentials, Reference, RegistryError, Repository};

/// The build secret that signs pushed images.
pub const IMAGE_SIGNING: &str = "image-signing";

/// The key file looked for when the secret is a folder.
const KEY_FILES: &[&str] = &["sigstore.key", "gpg-key.asc"];

/// A key that signs pushed images.
pub enum ImageSigner {
    /// An ECDSA P-256 key: sigstore signatures.
    Sigstore(p256::ecdsa::SigningKey),
    /// An armored OpenPGP secret key: GPG simple signing signatures.
    Gpg(Vec<u8>),
}

impl std::fmt::Debug for ImageSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Sigstore(_) => "ImageSigner::Sigstore(..)",
            Self::Gpg(_) => "ImageSigner::Gpg(..)",
        })
    }
}

impl ImageSigner {
    /// The key at `src`: the file, or `sigstore.key` or `gpg-key.asc` in the folder.
    pub fn load(src: &Path) -> Result<Self, String> {
        let file = if src.is_dir() {
            KEY_FILES
                .iter()
                .map(|name| src.join(name))
                .find(|path| path.is_file())
                .ok_or_else(|| {
                    format!(
                        "{}: holds neither {}",
                        src.display(),
                        KEY_FILES.join(" nor ")
                    )
                })?
        } else {
            src.to_owned()
        };
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        if text.contains("BEGIN PGP PRIVATE KEY BLOCK") {
            // Checked now, before the build: it must sign.
            crate::signature::gpg_sign(b"imgbuild", text.as_bytes())
                .map_err(|e| format!("{}: {e}", file.display()))?;
            return Ok(Self::Gpg(text.into_bytes()));
        }
        if text.contains("ENCRYPTED") {
            return Err(format!(
                "{}: an encrypted key; give it decrypted (openssl ec -in KEY -out sigstore.key), as the build's secret folder keeps it",
                file.display()
            ));
        }
        sigstore_key(&text).map(Self::Sigstore).ok_or_else(|| {
            format!(
                "{}: neither an ECDSA P-256 private key in PEM nor an armored OpenPGP secret key",
                file.display()
            )
        })
    }

    /// Signs the manifest `digest` pushed as `reference`: where the signature went.
    pub fn sign(
        &self,
        reference: &Reference,
        credentials: Option<Credentials>,
        digest: &str,
    ) -> Result<String, RegistryError> {
        let claimed = match &reference.tag {
            Some(tag) => format!("{}/{}:{tag}", reference.registry, reference.repository),
            None => format!("{}/{}", reference.registry, reference.repository),
        };
        let failed = |detail: String| RegistryError::Invalid {
            what: "the image's signature".into(),
            detail,
        };
        match self {
            Self::Sigstore(key) => {
                let payload = payload(&claimed, digest, "cosign container image signature");
                let signature: Signature = key.sign(payload.as_bytes());
                let encoded = base64::engine::general_purpose::STANDARD.encode(signature.to_der());
                let repository = Repository::open(reference, credentials, true);
                let tag = format!("{}.sig", digest.replace(':', "-"));
                crate::attachments::attach(&repository, &tag, payload.as_bytes(), &encoded)?;
                Ok(format!("{}:{tag}", repository.name()))
            }
            Self::Gpg(secret) => {
                let payload = payload(&claimed, digest, "atomic container signature");
                let signed =
                    crate::signature::gpg_sign(payload.as_bytes(), secret).map_err(failed)?;
                crate::lookaside::stage(reference, digest, &signed).map_err(failed)
            }
        }
    }
}

/// The simple signing payload of `type_`, claiming `claimed` for the manifest `digest`.
fn payload(claimed: &str, digest: &str, type_: &str) -> String {
    serde_json::json!({
        "critical": {"identity": {"docker-reference": claimed},
                     "image": {"docker-manifest-digest": digest},
                     "type": type_},
        "optional": {"creator": concat!("imgbuild ", env!("CARGO_PKG_VERSION"))},
    })
    .to_string()
}

/// An ECDSA P-256 private key in PEM (PKCS#8 or SEC1).
fn sigstore_key(text: &str) -> Option<p256::ecdsa::SigningKey> {
    use p256::pkcs8::DecodePrivateKey;
    p256::ecdsa::SigningKey::from_pkcs8_pem(text)
        .ok()
        .or_else(|| {
            p256::SecretKey::from_sec1_pem(text)
                .ok()
                .map(p256::ecdsa::SigningKey::from)
        })
}
