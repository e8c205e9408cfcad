//! What each build that writes the registry cache used, kept in the registry beside the layers:
//! a small artifact tagged `build-<image>-<start>-<id>`, written when the build starts and again
//! when it ends. `cache prune --registry` ([`super::remote_prune`]) reads them to know which
//! cache tags recent builds used, and whether a build is running.

use std::time::{SystemTime, UNIX_EPOCH};

use oci_spec::image::{Descriptor, MediaType};
use serde::{Deserialize, Serialize};

use super::remote::{RemoteCache, RemoteError};
use engine::events::{Event, Reporter};

/// The media type of a build record (the manifest's config).
pub const BUILD_RECORD_TYPE: &str = "application/vnd.imgbuild.layer-cache.build.v1+json";
/// The prefix of a build record's tag.
pub const BUILD_TAG_PREFIX: &str = "build-";
/// OCI's empty descriptor: the one layer of a build record's manifest.
const EMPTY_TYPE: &str = "application/vnd.oci.empty.v1+json";
const EMPTY_BYTES: &[u8] = b"{}";

/// One build's use of the registry cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildRecord {
    /// The image it built.
    pub image: String,
    /// When it started (seconds since 1970).
    pub started_at: u64,
    /// When it ended; `None` while it runs (or when it was killed).
    pub ended_at: Option<u64>,
    /// Whether it ended with an image.
    pub succeeded: bool,
    /// The cache tags it read or wrote (with `--jobs`, those of the images built beside it too).
    pub tags: Vec<String>,
}

/// The tag of a build's record: the image (characters a tag cannot hold become `-`), the start
/// and an id telling apart builds started in the same second.
pub fn build_tag(image: &str, started_at: u64, id: u32) -> String {
    let image: String = image
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '-',
        })
        .take(96)
        .collect();
    format!("{BUILD_TAG_PREFIX}{image}-{started_at}-{id:08x}")
}

pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A running build's record in the registry (`--cache-to` only): written as running when made,
/// and as ended by [`BuildUse::end`], or as failed when dropped without it.
pub struct BuildUse<'a> {
    remote: &'a RemoteCache,
    reporter: &'a dyn Reporter,
    tag: String,
    record: BuildRecord,
    ended: bool,
}

impl<'a> BuildUse<'a> {
    /// Writes the record of a build of `image` that starts now, when `remote` writes a
    /// registry; `None` otherwise.
    pub fn begin(remote: &'a RemoteCache, image: &str, reporter: &'a dyn Reporter) -> Option<Self> {
        if !remote.writes() {
            return None;
        }
        let started_at = now();
        let id = std::process::id()
            ^ SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
        let build = Self {
            remote,
            reporter,
            tag: build_tag(image, started_at, id),
            record: BuildRecord {
                image: image.to_owned(),
                started_at,
                ended_at: None,
                succeeded: false,
                tags: Vec::new(),
            },
            ended: false,
        };
        build.write();
        Some(build)
    }

    /// Writes the record again as ended, with every cache tag the build used.
    pub fn end(mut self, succeeded: bool) {
        self.finish(succeeded);
    }

    fn finish(&mut self, succeeded: bool) {
        self.ended = true;
        self.record.ended_at = Some(now());
        self.record.succeeded = succeeded;
        self.record.tags = self.remote.used_tags();
        self.write();
    }

    fn write(&self) {
        let Err(e) = self.remote.write_build_record(&self.tag, &self.record) else {
            return;
        };
        // Out of reach: said once for the whole build, as for its layers.
        let message = if e.registry_down() {
            match self.remote.warning(false, "this build's record", &e) {
                Some(message) => message,
                None => return,
            }
        } else {
            format!(
                "warning: registry cache: the record of this build ({}) was not written: {e}; `cache prune --registry` may delete what it used",
                self.tag
            )
        };
        self.reporter.event(&Event::Note { message });
    }
}

impl Drop for BuildUse<'_> {
    fn drop(&mut self) {
        if !self.ended {
            self.finish(false);
        }
    }
}

impl RemoteCache {
    /// Writes `record` under `tag` in the repository `--cache-to` names.
    fn write_build_record(&self, tag: &str, record: &BuildRecord) -> Result<(), RemoteError> {
        let Some(repository) = self.written_repository() else {
            return Ok(());
        };
        let bytes = serde_json::to_vec(record)
            .map_err(|e| RemoteError::Wrong(format!("a build record: {e}")))?;
        let config = repository.push_bytes(&bytes)?;
        let empty = repository.push_bytes(EMPTY_BYTES)?;
        let manifest = build_manifest((&config, bytes.len()), &empty)?;
        let text = manifest
            .to_string()
            .map_err(|e| RemoteError::Wrong(e.to_string()))?;
        repository.put_manifest(tag, text.as_bytes(), crate::oci::MANIFEST)?;
        Ok(())
    }
}

/// A build record's manifest: the record as config, OCI's empty blob as its one layer.
fn build_manifest(
    (config, size): (&str, usize),
    empty: &str,
) -> Result<oci_spec::image::ImageManifest, RemoteError> {
    let digest = |d: &str| {
        d.parse::<oci_spec::image::Digest>()
            .map_err(|e| RemoteError::Wrong(format!("'{d}': {e}")))
    };
    let config = Descriptor::new(
        MediaType::Other(BUILD_RECORD_TYPE.into()),
        size as u64,
        digest(config)?,
    );
    let layer = Descriptor::new(
        MediaType::Other(EMPTY_TYPE.into()),
        EMPTY_BYTES.len() as u64,
        digest(empty)?,
    );
    super::remote::artifact_manifest(config, layer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_tag_holds_only_what_a_tag_may() {
        let tag = build_tag("rocky-9.5/compute node", 1_700_000_000, 0xab);
        assert_eq!(tag, "build-rocky-9.5-compute-node-1700000000-000000ab");
        let long = build_tag(&"x".repeat(300), 1, 1);
        assert!(long.len() <= 128, "{}", long.len());
    }

    #[test]
    fn the_manifest_names_the_record_and_the_empty_blob() {
        let config = format!("sha256:{}", "a".repeat(64));
        let empty = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
        let manifest = build_manifest((&config, 10), empty).expect("manifest");
        assert_eq!(
            manifest.config().media_type(),
            &MediaType::Other(BUILD_RECORD_TYPE.into())
        );
        assert_eq!(manifest.layers()[0].digest().to_string(), empty);
    }
}
