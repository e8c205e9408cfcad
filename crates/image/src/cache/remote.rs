//! The layer cache kept in a registry (`--cache-from`, `--cache-to`), so that CI runners that
//! start with an empty disk reuse what another runner built. Each layer is an OCI artifact
//! tagged by its cache key: a manifest whose config is a small record (the key's inputs, the
//! layer's digest and diff_id, what the role registered) and whose one layer is the layer blob
//! itself. A hit is only taken when everything checks: the record is the key's, the blob has the
//! record's digest (checked while it streams) and unpacks to the record's diff_id. Anything else
//! is a warning, and the role runs here: the registry cache never gives a wrong layer and never
//! fails a build.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use oci_spec::image::{Descriptor, ImageManifest, ImageManifestBuilder, MediaType};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::Inputs;
use crate::blobs::{BlobStore, LayerBlob};
use crate::hashing::HashingReader;

/// The `artifactType` of a cache manifest.
pub const ARTIFACT_TYPE: &str = "application/vnd.imgbuild.layer-cache.v1";
/// The media type of a cache record (the manifest's config).
pub const RECORD_TYPE: &str = "application/vnd.imgbuild.layer-cache.record.v1+json";
/// Records are small; a larger one is not ours.
const RECORD_LIMIT: u64 = 16 << 20;

/// Why the registry cache could not be used for one layer.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The registry refused, was not reached, or sent a blob that is not its digest.
    #[error(transparent)]
    Registry(#[from] registry::RegistryError),
    /// The record or the layer is not what the key needs.
    #[error("{0}")]
    Wrong(String),
    /// Reading or writing the local copy failed.
    #[error("{what}: {cause}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        cause: std::io::Error,
    },
}

impl RemoteError {
    /// Whether the registry itself is out of reach (not one missing or wrong layer): then the
    /// build goes on without it rather than asking again for every layer.
    pub(super) fn registry_down(&self) -> bool {
        matches!(
            self,
            RemoteError::Registry(
                registry::RegistryError::Transport { .. }
                    | registry::RegistryError::Unauthorized { .. }
            )
        )
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RemoteError {
    let what = what.into();
    move |cause| RemoteError::Io { what, cause }
}

/// What the registry keeps of a role's layer beside its blob.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoleRecord {
    /// The inputs that made it (their key is the tag).
    pub inputs: Inputs,
    /// What the role registered and set, restored on a hit as from the local cache.
    pub registered: Json,
    /// Seconds the role took when it ran.
    pub seconds: f64,
    /// When it ran (seconds since 1970).
    pub built_at: u64,
    /// The initramfs builds deferred and not yet done when it ended, restored on a hit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub initramfs_pending: Vec<String>,
}

/// A cache record: the layer, and for a role's layer what the role left for later roles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The tag it is kept under (a record copied under another tag is refused).
    pub tag: String,
    /// The layer's blob.
    pub blob: LayerBlob,
    /// What made it (`imgbuild role x`, `debootstrap --variant=minbase bookworm`).
    pub created_by: String,
    /// For a role's layer.
    pub role: Option<RoleRecord>,
}

impl Record {
    /// Whether this is the record `tag` names: its own tag, and for a role's layer the tag of
    /// its inputs' key (a base's record, and a bundle of compile cache entries, have no role).
    fn is_for(&self, tag: &str) -> bool {
        let kind_fits = match &self.role {
            Some(role) => role_tag(&role.inputs) == tag,
            None => tag.starts_with("base-") || tag.starts_with("compiles-"),
        };
        self.tag == tag && kind_fits
    }
}

/// The tag of a role's layer: its cache key.
pub fn role_tag(inputs: &Inputs) -> String {
    format!("layer-{}", inputs.key())
}

/// The tag of a base's layer: the base's key and the epoch its layer was written with.
pub fn base_tag(key: &str, epoch: u64) -> String {
    format!("base-{}-{epoch}", key.trim_start_matches("sha256:"))
}

/// One side of the registry cache: a repository, out of use once it proved unreachable.
#[derive(Debug)]
struct Side {
    repository: registry::Repository,
    down: AtomicBool,
}

/// Where a build reads layers from (`--cache-from`) and writes them to (`--cache-to`).
#[derive(Debug, Default)]
pub struct RemoteCache {
    from: Option<Side>,
    to: Option<Side>,
    /// Tags whose layer was found wrong or incomplete: written again when built here.
    damaged: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// Tags this process's builds read or wrote (what their build records list).
    used: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl RemoteCache {
    /// A registry cache reading from `from` and writing to `to` (either may be absent), with the
    /// credentials `--push` uses.
    pub fn open(
        from: Option<&registry::Reference>,
        to: Option<&registry::Reference>,
    ) -> Result<Self, registry::RegistryError> {
        let side = |reference: &registry::Reference, push: bool| {
            let credentials =
                registry::Credentials::for_reference(&reference.registry, &reference.repository)?;
            Ok::<_, registry::RegistryError>(Side {
                repository: registry::Repository::open(reference, credentials, push),
                down: AtomicBool::new(false),
            })
        };
        Ok(Self {
            from: from.map(|r| side(r, false)).transpose()?,
            to: to.map(|r| side(r, true)).transpose()?,
            damaged: Default::default(),
            used: Default::default(),
        })
    }

    /// The repository `--cache-to` names, unless it proved out of reach.
    pub(super) fn written_repository(&self) -> Option<&registry::Repository> {
        let side = self.to.as_ref()?;
        (!side.down.load(Ordering::Relaxed)).then_some(&side.repository)
    }

    /// Every cache tag this process's builds read or wrote, in order.
    pub(super) fn used_tags(&self) -> Vec<String> {
        let used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        used.iter().cloned().collect()
    }

    fn mark_used(&self, tag: &str) {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        used.insert(tag.to_owned());
    }

    /// Whether layers are looked for in a registry.
    pub fn reads(&self) -> bool {
        self.from.is_some()
    }

    /// The repository layers are read from, for people (empty when none).
    pub fn source_name(&self) -> String {
        self.from
            .as_ref()
            .map(|s| s.repository.name())
            .unwrap_or_default()
    }

    /// Whether layers are written to a registry.
    pub fn writes(&self) -> bool {
        self.to.is_some()
    }

    /// The record under `tag`, with the blob it names stored in `blobs` (verified by digest
    /// while it streams); `None` when the registry has no such layer.
    pub fn find(&self, tag: &str, blobs: &BlobStore) -> Result<Option<Record>, RemoteError> {
        let Some(side) = self
            .from
            .as_ref()
            .filter(|s| !s.down.load(Ordering::Relaxed))
        else {
            return Ok(None);
        };
        let repository = &side.repository;
        let Some(bytes) = repository.manifest(tag)? else {
            return Ok(None);
        };
        let wrong = |what: &str| RemoteError::Wrong(format!("{}:{tag} {what}", repository.name()));
        let manifest = ImageManifest::from_reader(&bytes[..])
            .map_err(|e| wrong(&format!("is not an OCI manifest ({e})")))?;
        let config = manifest.config();
        if config.media_type() != &MediaType::Other(RECORD_TYPE.into()) {
            return Err(wrong("is not an imgbuild cache record"));
        }
        let record_bytes = repository.blob_bytes(config.digest().as_ref(), RECORD_LIMIT)?;
        let record: Record = serde_json::from_slice(&record_bytes)
            .map_err(|e| wrong(&format!("has a record imgbuild cannot read ({e})")))?;
        if !record.is_for(tag) {
            return Err(wrong("holds the record of another layer"));
        }
        let named = manifest.layers().first().map(|d| d.digest().to_string());
        if named.as_deref() != Some(record.blob.digest.as_str()) {
            return Err(wrong("names another blob than its record"));
        }
        let blob = blobs
            .checked_path(&record.blob.digest)
            .map_err(|e| wrong(&format!("names no blob ({e})")))?;
        if !blob.is_file() {
            repository.blob_to_file(&record.blob.digest, &blob)?;
            crate::blobs::readable(&blob).map_err(io("storing a layer"))?;
        }
        self.mark_used(tag);
        Ok(Some(record))
    }

    /// Writes `record` and its blob (from `blobs`) under its tag, unless the registry has it
    /// (and this build did not find it wrong there); true when it was written.
    pub fn share(&self, record: &Record, blobs: &BlobStore) -> Result<bool, RemoteError> {
        self.write(record, blobs, false)
    }

    /// Writes `record` and its blob (from `blobs`) under its tag, `replace`-ing what the
    /// registry has there (a compile bundle: the last build's is the one to keep); true when it
    /// was written.
    fn write(
        &self,
        record: &Record,
        blobs: &BlobStore,
        replace: bool,
    ) -> Result<bool, RemoteError> {
        let Some(side) = self.to.as_ref().filter(|s| !s.down.load(Ordering::Relaxed)) else {
            return Ok(false);
        };
        let repository = &side.repository;
        let damaged = self
            .damaged
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&record.tag);
        if !replace && !damaged && repository.has_manifest(&record.tag)? {
            self.mark_used(&record.tag);
            return Ok(false);
        }
        let record_bytes = serde_json::to_vec(record).map_err(|e| io("a record")(e.into()))?;
        let record_digest = blobs.write_bytes(&record_bytes).map_err(io("a record"))?;
        for digest in [&record.blob.digest, &record_digest] {
            repository.push_blob(&registry::PushBlob {
                digest: digest.clone(),
                path: blobs.path(digest).map_err(io("a layer to push"))?,
            })?;
        }
        let manifest = cache_manifest(record, &record_digest, record_bytes.len() as u64)?;
        let bytes = manifest
            .to_string()
            .map_err(|e| RemoteError::Wrong(e.to_string()))?;
        repository.put_manifest(&record.tag, bytes.as_bytes(), crate::oci::MANIFEST)?;
        self.mark_used(&record.tag);
        Ok(true)
    }

    /// What to tell of `error` met while reading (or writing) `what`'s layer, and whether to
    /// tell it: a registry out of reach is said once and then left alone for the rest of the
    /// build.
    pub(super) fn warning(&self, reading: bool, what: &str, error: &RemoteError) -> Option<String> {
        if error.registry_down() {
            let side = if reading { &self.from } else { &self.to };
            let side = side.as_ref()?;
            if side.down.swap(true, Ordering::Relaxed) {
                return None;
            }
            return Some(format!(
                "warning: registry cache {}: {error}; this build goes on without it",
                side.repository.name()
            ));
        }
        let doing = if reading { "not taken" } else { "not shared" };
        Some(format!(
            "warning: registry cache: {what}'s layer {doing}: {error}"
        ))
    }
}

/// The manifest of a cache record: the record as config, the layer blob as its one layer.
fn cache_manifest(
    record: &Record,
    record_digest: &str,
    record_size: u64,
) -> Result<ImageManifest, RemoteError> {
    let digest = |d: &str| {
        d.parse::<oci_spec::image::Digest>()
            .map_err(|e| RemoteError::Wrong(format!("'{d}': {e}")))
    };
    let config = Descriptor::new(
        MediaType::Other(RECORD_TYPE.into()),
        record_size,
        digest(record_digest)?,
    );
    let layer = Descriptor::new(
        MediaType::from(record.blob.compression.media_type()),
        record.blob.size,
        digest(&record.blob.digest)?,
    );
    artifact_manifest(config, layer)
}

/// A cache artifact's manifest: `config` and its one `layer` (a cache record and its layer
/// blob, or a build record and OCI's empty blob).
pub(super) fn artifact_manifest(
    config: Descriptor,
    layer: Descriptor,
) -> Result<ImageManifest, RemoteError> {
    ImageManifestBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageManifest)
        .artifact_type(MediaType::Other(ARTIFACT_TYPE.into()))
        .config(config)
        .layers(vec![layer])
        .build()
        .map_err(|e| RemoteError::Wrong(e.to_string()))
}

/// Unpacks the stored blob of `record` into the folder `dest` (created), in overlay form for a
/// role's layer or applied for a base, and checks that its tar is the record's diff_id.
pub fn unpack(
    record: &Record,
    blobs: &BlobStore,
    dest: &Path,
    whiteouts: engine::archive::Whiteouts,
) -> Result<(), RemoteError> {
    std::fs::create_dir_all(dest).map_err(io("unpacking a layer"))?;
    let fs = engine::rootfs::RootFs::plain(dest).map_err(io("unpacking a layer"))?;
    let file = blobs
        .path(&record.blob.digest)
        .and_then(std::fs::File::open)
        .map_err(io("reading a layer"))?;
    let reader = record
        .blob
        .compression
        .reader(std::io::BufReader::with_capacity(1 << 20, file))
        .map_err(io("reading a layer"))?;
    let mut hashing = HashingReader::new(reader);
    let limits = engine::archive::Limits {
        allow_devices: true,
        whiteouts,
        ..engine::archive::Limits::default()
    };
    engine::archive::extract_tar(&mut hashing, &fs, Path::new("/"), limits)
        .map_err(|e| RemoteError::Wrong(format!("layer {}: {e}", record.blob.digest)))?;
    let (diff_id, _) = hashing.finish().map_err(io("reading a layer"))?;
    if diff_id != record.blob.diff_id {
        return Err(RemoteError::Wrong(format!(
            "layer {} unpacks to {diff_id}, not to the record's {}",
            record.blob.digest, record.blob.diff_id
        )));
    }
    Ok(())
}

/// The registry cache as a build step uses it: every failure becomes a warning for the
/// reporter and the step goes on without the registry.
pub struct RegistryCache<'a> {
    /// The registries.
    pub remote: &'a RemoteCache,
    /// Where warnings go.
    pub reporter: &'a dyn engine::events::Reporter,
}

impl RegistryCache<'_> {
    /// The layer under `tag`, its blob stored in `blobs` and unpacked into `dest`, or `None`
    /// (a miss, or a warning said why the registry's layer was not taken; `dest` then holds
    /// nothing).
    pub fn take(
        &self,
        what: &str,
        tag: &str,
        blobs: &BlobStore,
        dest: &Path,
        whiteouts: engine::archive::Whiteouts,
    ) -> Option<Record> {
        if !self.remote.reads() {
            return None;
        }
        let taken = self.remote.find(tag, blobs).and_then(|found| match found {
            Some(record) => unpack(&record, blobs, dest, whiteouts).map(|()| Some(record)),
            None => Ok(None),
        });
        match taken {
            Ok(record) => record,
            Err(e) => {
                let _ = std::fs::remove_dir_all(dest);
                if !e.registry_down() {
                    self.remote
                        .damaged
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(tag.to_owned());
                }
                if let Some(message) = self.remote.warning(true, what, &e) {
                    self.warn(format!("{message}; it is built here"));
                }
                None
            }
        }
    }

    /// Shares `record` (`what`'s layer, its blob in `blobs`) through `--cache-to`, unless the
    /// registry has it.
    pub fn share(&self, what: &str, record: &Record, blobs: &BlobStore) {
        self.write(what, record, blobs, false);
    }

    /// Writes `record` through `--cache-to` in place of what the registry has under its tag.
    pub fn replace(&self, what: &str, record: &Record, blobs: &BlobStore) {
        self.write(what, record, blobs, true);
    }

    fn write(&self, what: &str, record: &Record, blobs: &BlobStore, replace: bool) {
        if !self.remote.writes() {
            return;
        }
        if let Err(e) = self.remote.write(record, blobs, replace) {
            if let Some(message) = self.remote.warning(false, what, &e) {
                self.warn(message);
            }
        }
    }

    fn warn(&self, message: String) {
        self.reporter
            .event(&engine::events::Event::Note { message });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(role: Option<RoleRecord>, tag: &str) -> Record {
        Record {
            tag: tag.to_owned(),
            blob: LayerBlob {
                digest: format!("sha256:{}", "a".repeat(64)),
                size: 10,
                diff_id: format!("sha256:{}", "b".repeat(64)),
                diff_size: 20,
                compression: crate::compression::Compression::Gzip,
            },
            created_by: "imgbuild role r".into(),
            role,
        }
    }

    #[test]
    fn a_record_is_only_taken_under_its_own_tag() {
        let inputs = Inputs {
            tasks: "t".into(),
            ..Inputs::default()
        };
        let made = RoleRecord {
            inputs: inputs.clone(),
            registered: Json::Null,
            seconds: 1.0,
            built_at: 0,
            initramfs_pending: Vec::new(),
        };
        let tag = role_tag(&inputs);
        assert!(record(Some(made.clone()), &tag).is_for(&tag));
        let other = role_tag(&Inputs::default());
        assert!(
            !record(Some(made.clone()), &other).is_for(&other),
            "a role's record copied under another key's tag"
        );
        assert!(!record(Some(made), &tag).is_for(&other));
        assert!(
            !record(None, &tag).is_for(&tag),
            "a base's record under a role's tag"
        );
        let base = base_tag("sha256:k", 1_700_000_000);
        assert_eq!(base, "base-k-1700000000");
        assert!(record(None, &base).is_for(&base));
    }

    #[test]
    fn the_manifest_is_an_artifact_holding_the_record_and_the_layer() {
        let r = record(None, "base-k-1");
        let digest = format!("sha256:{}", "c".repeat(64));
        let manifest = cache_manifest(&r, &digest, 99).expect("manifest");
        let text = manifest.to_string().expect("json");
        let parsed = ImageManifest::from_reader(text.as_bytes()).expect("read back");
        assert_eq!(
            parsed.artifact_type(),
            &Some(MediaType::Other(ARTIFACT_TYPE.into()))
        );
        assert_eq!(
            parsed.config().media_type(),
            &MediaType::Other(RECORD_TYPE.into())
        );
        assert_eq!(parsed.config().size(), 99);
        let layer = &parsed.layers()[0];
        assert_eq!(layer.digest().to_string(), r.blob.digest);
        assert_eq!(layer.media_type(), &MediaType::ImageLayerGzip);
    }
}
