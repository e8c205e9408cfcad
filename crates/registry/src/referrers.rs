//! OCI 1.1 referrers: an artifact (an SBOM) pushed with a `subject` naming an image's manifest,
//! and the referrers of a digest listed back. Registries without the referrers API (Debian's
//! distribution 2.8) get the spec's fallback too, as `oras` keeps it: an image index under the
//! tag `sha256-<hex>` listing the referrers.

use serde::{Deserialize, Serialize};

use crate::client::Body;
use crate::error::{io, RegistryError};
use crate::repository::Repository;
use crate::transfer::{self, PushBlob, OCI_INDEX, OCI_MANIFEST};

/// The empty config of an artifact manifest (`{}`).
pub const EMPTY_CONFIG: &str = "application/vnd.oci.empty.v1+json";
const EMPTY_BYTES: &[u8] = b"{}";

/// A content descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Its media type.
    pub media_type: String,
    /// `sha256:...`.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// The artifact's type (a referrer in an index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
}

/// One referrer of a digest: the artifact manifest's descriptor.
pub type Referrer = Descriptor;

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Index {
    schema_version: u32,
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactManifest<'a> {
    schema_version: u32,
    media_type: &'a str,
    artifact_type: &'a str,
    config: Descriptor,
    layers: Vec<Descriptor>,
    subject: &'a Descriptor,
}

/// The fallback tag of `digest`: `sha256:<hex>` → `sha256-<hex>`.
fn fallback_tag(digest: &str) -> String {
    digest.replace(':', "-")
}

impl PushBlob {
    /// The blob of the file at `path`, its digest computed.
    pub fn of_file(path: &std::path::Path) -> Result<PushBlob, RegistryError> {
        let bytes = std::fs::read(path).map_err(io(path.display().to_string()))?;
        Ok(PushBlob {
            digest: transfer::sha256_hex(&bytes),
            path: path.to_owned(),
        })
    }
}

impl Repository {
    /// Pushes `file` (`blob`, of `media_type`) as an artifact of `artifact_type` referring to
    /// `subject`, and adds it to the fallback tag's index when the registry did not take the
    /// subject itself (no `OCI-Subject` header). Returns the artifact manifest's digest.
    pub fn push_referrer(
        &self,
        subject: &Descriptor,
        artifact_type: &str,
        blob: &PushBlob,
        media_type: &str,
    ) -> Result<String, RegistryError> {
        let empty = tempfile::NamedTempFile::new().map_err(io("the empty config"))?;
        std::fs::write(empty.path(), EMPTY_BYTES).map_err(io("the empty config"))?;
        let config = Descriptor {
            media_type: EMPTY_CONFIG.to_owned(),
            digest: transfer::sha256_hex(EMPTY_BYTES),
            size: EMPTY_BYTES.len() as u64,
            artifact_type: None,
        };
        self.push_blob(&PushBlob {
            digest: config.digest.clone(),
            path: empty.path().to_owned(),
        })?;
        self.push_blob(blob)?;
        let size = std::fs::metadata(&blob.path)
            .map(|m| m.len())
            .map_err(io(blob.path.display().to_string()))?;
        let layer = Descriptor {
            media_type: media_type.to_owned(),
            digest: blob.digest.clone(),
            size,
            artifact_type: None,
        };
        let manifest = serde_json::to_vec(&ArtifactManifest {
            schema_version: 2,
            media_type: OCI_MANIFEST,
            artifact_type,
            config,
            layers: vec![layer],
            subject,
        })
        .map_err(|e| invalid("the artifact manifest", &e.to_string()))?;
        let digest = transfer::sha256_hex(&manifest);
        let url = self.client.url(&format!("manifests/{digest}"))?;
        let response = self.client.call(
            "PUT",
            &url,
            &[("Content-Type", OCI_MANIFEST)],
            Body::Bytes(&manifest),
        )?;
        if response.header("OCI-Subject").is_none() {
            let referrer = Descriptor {
                media_type: OCI_MANIFEST.to_owned(),
                digest: digest.clone(),
                size: manifest.len() as u64,
                artifact_type: Some(artifact_type.to_owned()),
            };
            self.add_to_fallback(&subject.digest, referrer)?;
        }
        Ok(digest)
    }

    fn add_to_fallback(&self, subject: &str, referrer: Descriptor) -> Result<(), RegistryError> {
        let tag = fallback_tag(subject);
        let mut index = match self.manifest(&tag)? {
            Some(bytes) => parse_index(&bytes, &tag)?,
            None => Index {
                schema_version: 2,
                media_type: Some(OCI_INDEX.to_owned()),
                manifests: Vec::new(),
            },
        };
        if index.manifests.iter().any(|m| m.digest == referrer.digest) {
            return Ok(());
        }
        index.manifests.push(referrer);
        let bytes = serde_json::to_vec(&index).map_err(|e| invalid(&tag, &e.to_string()))?;
        self.put_manifest(&tag, &bytes, OCI_INDEX)?;
        Ok(())
    }

    /// The referrers of `digest`, of `artifact_type` when given: from the referrers API
    /// (`GET /v2/<name>/referrers/<digest>`), else from the fallback tag.
    pub fn referrers(
        &self,
        digest: &str,
        artifact_type: Option<&str>,
    ) -> Result<Vec<Referrer>, RegistryError> {
        let url = self.client.url(&format!("referrers/{digest}"))?;
        let from_api = match self
            .client
            .call("GET", &url, &[("Accept", OCI_INDEX)], Body::Empty)
        {
            Ok(response) => {
                let json = response
                    .header("Content-Type")
                    .is_some_and(|t| t.starts_with(OCI_INDEX));
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut response.into_reader(), &mut bytes).map_err(
                    |e| RegistryError::Transport {
                        what: format!("GET {url}"),
                        detail: e.to_string(),
                    },
                )?;
                json.then(|| parse_index(&bytes, &url)).transpose()?
            }
            Err(RegistryError::Status { status: 404, .. }) => None,
            Err(e) => return Err(e),
        };
        let index = match from_api {
            Some(index) => index,
            None => match self.manifest(&fallback_tag(digest))? {
                Some(bytes) => parse_index(&bytes, &fallback_tag(digest))?,
                None => return Ok(Vec::new()),
            },
        };
        Ok(index
            .manifests
            .into_iter()
            .filter(|m| artifact_type.is_none() || m.artifact_type.as_deref() == artifact_type)
            .collect())
    }
}

fn parse_index(bytes: &[u8], what: &str) -> Result<Index, RegistryError> {
    serde_json::from_slice(bytes).map_err(|e| invalid(what, &format!("not an image index: {e}")))
}

fn invalid(what: &str, detail: &str) -> RegistryError {
    RegistryError::Invalid {
        what: what.to_owned(),
        detail: detail.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_tag_replaces_the_colon() {
        let digest = format!("sha256:{}", "a".repeat(64));
        assert_eq!(fallback_tag(&digest), format!("sha256-{}", "a".repeat(64)));
        let index = Index {
            schema_version: 2,
            media_type: Some(OCI_INDEX.into()),
            manifests: vec![Descriptor {
                media_type: OCI_MANIFEST.into(),
                digest,
                size: 3,
                artifact_type: Some("application/vnd.cyclonedx+json".into()),
            }],
        };
        let text = serde_json::to_string(&index).expect("json");
        assert!(
            text.contains("\"artifactType\":\"application/vnd.cyclonedx+json\""),
            "{text}"
        );
        assert_eq!(
            parse_index(text.as_bytes(), "x").expect("parse").manifests,
            index.manifests
        );
    }
}
