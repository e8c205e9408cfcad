//! One repository read and written a document or a blob at a time: what a layer cache kept in
//! a registry needs (a small record under a tag, the layer blob it names), beside the whole-image
//! `pull` and `push`.

use std::io::Read;
use std::path::Path;

use crate::auth::Credentials;
use crate::client::{Body, Client};
use crate::error::RegistryError;
use crate::reference::Reference;
use crate::transfer::{self, PushBlob};

/// A repository on a registry, with the auth dance done once and reused.
#[derive(Debug)]
pub struct Repository {
    pub(crate) client: Client,
    pub(crate) reference: Reference,
}

impl Repository {
    /// The repository of `reference` (its tag or digest is ignored); `push` asks for push
    /// rights too.
    pub fn open(reference: &Reference, credentials: Option<Credentials>, push: bool) -> Self {
        Self {
            client: Client::new(reference, credentials, push),
            reference: reference.clone(),
        }
    }

    /// The repository, for messages (`127.0.0.1:5000/site/cache`).
    pub fn name(&self) -> String {
        format!("{}/{}", self.reference.registry, self.reference.repository)
    }

    /// The manifest under `tag`, or `None` when the registry has none there.
    pub fn manifest(&self, tag: &str) -> Result<Option<Vec<u8>>, RegistryError> {
        match transfer::get_manifest(&self.client, tag, None) {
            Ok((bytes, _)) => Ok(Some(bytes)),
            Err(RegistryError::Status { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether the registry has a manifest under `tag` (a HEAD request, nothing downloaded).
    pub fn has_manifest(&self, tag: &str) -> Result<bool, RegistryError> {
        let url = self.client.url(&format!("manifests/{tag}"))?;
        let accept = transfer::OCI_MANIFEST;
        match self
            .client
            .call("HEAD", &url, &[("Accept", accept)], Body::Empty)
        {
            Ok(_) => Ok(true),
            Err(RegistryError::Status { status: 404, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// A small blob (at most `limit` bytes), verified against its digest.
    pub fn blob_bytes(&self, digest: &str, limit: u64) -> Result<Vec<u8>, RegistryError> {
        let url = self.client.url(&format!("blobs/{digest}"))?;
        let response = self.client.call("GET", &url, &[], Body::Empty)?;
        let mut bytes = Vec::new();
        response
            .into_reader()
            .take(limit)
            .read_to_end(&mut bytes)
            .map_err(|e| RegistryError::Transport {
                what: format!("GET {url}"),
                detail: e.to_string(),
            })?;
        let actual = transfer::sha256_hex(&bytes);
        if actual != digest {
            return Err(RegistryError::DigestMismatch {
                what: url,
                expected: digest.to_owned(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// Downloads blob `digest` to `dest`, verified while it streams (through a temporary file:
    /// a wrong or cut blob leaves nothing at `dest`).
    pub fn blob_to_file(&self, digest: &str, dest: &Path) -> Result<(), RegistryError> {
        transfer::get_blob(&self.client, digest, dest)
    }

    /// Uploads a blob unless the registry has it; true when it was uploaded.
    pub fn push_blob(&self, blob: &PushBlob) -> Result<bool, RegistryError> {
        transfer::push_blob(&self.client, blob)
    }

    /// Puts `manifest` under `tag`; returns its digest.
    pub fn put_manifest(
        &self,
        tag: &str,
        manifest: &[u8],
        media_type: &str,
    ) -> Result<String, RegistryError> {
        let url = self.client.url(&format!("manifests/{tag}"))?;
        self.client.call(
            "PUT",
            &url,
            &[("Content-Type", media_type)],
            Body::Bytes(manifest),
        )?;
        Ok(transfer::sha256_hex(manifest))
    }
}
