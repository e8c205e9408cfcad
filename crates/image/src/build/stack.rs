//! What a build holds while it runs: the layers so far and the caches.

use std::path::PathBuf;

use super::error::{io, BuildError};
use super::outcome::LayerReport;
use super::settings::Settings;
use crate::blobs::{BlobStore, LayerBlob};
use crate::cache::LayerCache;

/// The layers built so far, bottom first: each blob with its history line, the folder holding
/// its files, and what the build reports of it.
#[derive(Debug, Default)]
pub(crate) struct Stack {
    /// Each layer's blob and its history line (a layer whose blob is still being written comes
    /// once it is: see `pending`).
    pub(super) layers: Vec<(LayerBlob, String)>,
    /// The folder holding each layer's files.
    pub(super) trees: Vec<PathBuf>,
    /// Each layer's diff_id, known before its blob: what the cache keys of the roles above
    /// chain on.
    pub(super) diff_ids: Vec<String>,
    /// What the build reports of each layer.
    pub(super) reports: Vec<LayerReport>,
}

/// The caches a build reads and fills, held for the whole build.
pub(crate) struct Stores {
    /// The content-addressed blobs.
    pub(super) blobs: BlobStore,
    /// The layer cache.
    pub(super) cache: LayerCache,
    /// The shared lock on the cache, held while the build runs.
    _in_use: std::fs::File,
}

impl Stores {
    /// Opens the caches of `settings` and holds the cache's shared lock.
    pub(super) fn open(settings: &Settings) -> Result<Stores, BuildError> {
        let blobs =
            BlobStore::new(&settings.cache_dir.join("blobs")).map_err(io("the blob cache"))?;
        let cache = LayerCache::new(&settings.cache_dir).map_err(io("the layer cache"))?;
        // Held until the build ends: `cache prune` never removes what a running build uses.
        let in_use = cache.hold().map_err(io("the layer cache"))?;
        Ok(Stores {
            blobs,
            cache,
            _in_use: in_use,
        })
    }
}
