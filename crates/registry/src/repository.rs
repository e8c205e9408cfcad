//! One repository read and written a document or a blob at a time: what a layer cache kept in
//! a registry needs (a small record under a tag, the layer blob it names), beside the whole-image
//! `pull` and `push`.

use std::io::Read;
use std::path::Path;

use serde::Deserialize;

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

    /// The repository of `reference`, with rights to delete (pruning a cache): tokens are asked
    /// for pull, push and delete.
    pub fn open_for_pruning(reference: &Reference, credentials: Option<Credentials>) -> Self {
        Self {
            client: Client::new(reference, credentials, true).allowing_delete(),
            reference: reference.clone(),
        }
    }

    /// Every tag of the repository (the tags list, page by page as its `Link` headers lead).
    pub fn tags(&self) -> Result<Vec<String>, RegistryError> {
        let mut url = self.client.url("tags/list?n=1000")?;
        let mut tags = Vec::new();
        loop {
            let response = match self.client.call("GET", &url, &[], Body::Empty) {
                Ok(response) => response,
                Err(RegistryError::Status { status: 404, .. }) => return Ok(tags),
                Err(e) => return Err(e),
            };
            let next = response.header("Link").and_then(next_page);
            let reader = response.into_reader().take(64 << 20);
            let page: TagsPage =
                serde_json::from_reader(reader).map_err(|e| RegistryError::Invalid {
                    what: format!("GET {url}"),
                    detail: format!("not a tags list: {e}"),
                })?;
            tags.extend(page.tags.unwrap_or_default());
            match next {
                Some(next) => url = self.client.absolute(&next)?,
                None => return Ok(tags),
            }
        }
    }

    /// Deletes the manifest `digest` (`sha256:...`), and with it every tag naming it. A
    /// registry that keeps deleting off says so, with what turns it on.
    pub fn delete_manifest(&self, digest: &str) -> Result<(), RegistryError> {
        let url = self.client.url(&format!("manifests/{digest}"))?;
        match self.client.call("DELETE", &url, &[], Body::Empty) {
            Ok(_) => Ok(()),
            Err(RegistryError::Status { status: 405, what, body }) => Err(RegistryError::Unsupported {
                what,
                hint: format!("the registry does not allow deleting (HTTP 405{body}); turn deletes on (docker-registry: `storage: delete: enabled: true`) or prune with the registry's own tools"),
            }),
            Err(e) => Err(e),
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

    /// Uploads `bytes` as a blob unless the registry has it; returns its digest.
    pub fn push_bytes(&self, bytes: &[u8]) -> Result<String, RegistryError> {
        let file = tempfile::NamedTempFile::new().map_err(crate::error::io("a blob to push"))?;
        std::fs::write(file.path(), bytes).map_err(crate::error::io("a blob to push"))?;
        let digest = transfer::sha256_hex(bytes);
        self.push_blob(&PushBlob {
            digest: digest.clone(),
            path: file.path().to_owned(),
        })?;
        Ok(digest)
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

/// One page of `GET /v2/<name>/tags/list`.
#[derive(Deserialize)]
struct TagsPage {
    tags: Option<Vec<String>>,
}

/// The next page's URL in a `Link: <url>; rel="next"` header.
fn next_page(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| p.trim().replace(' ', "") == "rel=\"next\"")
            .then(|| {
                target
                    .trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_owned()
            })
    })
}

#[cfg(test)]
mod tests {
    use super::next_page;

    #[test]
    fn the_next_page_is_read_from_the_link_header() {
        assert_eq!(
            next_page(r#"</v2/site/cache/tags/list?last=layer-9&n=1000>; rel="next""#).as_deref(),
            Some("/v2/site/cache/tags/list?last=layer-9&n=1000")
        );
        assert_eq!(next_page(r#"</v2/x>; rel="prev""#), None);
    }
}
