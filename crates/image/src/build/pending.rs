//! A role's layer whose files are in the cache while its blob is written: tarred, hashed and
//! compressed on a thread of its own, so the next role runs meanwhile. The next role's cache
//! key needs only the layer's diff_id, which a tar pass without compression gives first.

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Instant;

use planner::plan::Step;

use super::error::{io, BuildError};
use super::settings::Settings;
use super::stack::Stores;
use crate::blobs::{diff_of, BlobStore};
use crate::cache::{Entry, LayerCache};
use crate::layer::Source;

/// A role's layer, as the build reports it.
#[derive(Clone)]
pub(super) struct RoleLayer {
    /// The role.
    pub role: String,
    /// Its steps (whether the registry cache may share it depends on them).
    pub steps: Vec<Step>,
    /// Why it was rebuilt.
    pub why: Vec<String>,
    /// When the build started on it, for its time in the report.
    pub started: Instant,
}

/// A role's layer being written.
pub(super) struct PendingLayer {
    /// The layer.
    pub layer: RoleLayer,
    /// The thread writing the blob and recording the entry: the stored entry, and the seconds
    /// the writing took.
    writer: Option<JoinHandle<Result<(Entry, f64), BuildError>>>,
}

/// What a role left for its layer: its folder and everything its entry says but the blob.
pub(super) struct Finished {
    /// The layer.
    pub layer: RoleLayer,
    /// The overlay upper holding the role's changes.
    pub upper: PathBuf,
    /// The entry to record, its blob still unknown.
    pub entry: Entry,
    /// The lock on the layer's key, held until the entry is recorded.
    pub making: std::fs::File,
}

impl PendingLayer {
    /// Places the role's folder in the cache, finds its diff_id, and starts the thread that
    /// writes its blob and records its entry. Returns the layer, its folder in the cache and its
    /// diff_id.
    pub fn start(
        finished: Finished,
        stores: &Stores,
        settings: &Settings,
    ) -> Result<(PendingLayer, PathBuf, String), BuildError> {
        let Finished {
            layer,
            upper,
            entry,
            making,
        } = finished;
        let role = layer.role.clone();
        let tree = stores
            .cache
            .place_tree(&upper, &entry.inputs.key())
            .map_err(io("storing the layer in the cache"))?;
        let (diff_id, _) = diff_of(&tree, Source::OverlayUpper, settings.epoch)
            .map_err(io(format!("reading the {role} layer")))?;
        let job = Job {
            blobs: stores.blobs.clone(),
            cache: stores.cache.clone(),
            tree: tree.clone(),
            epoch: settings.epoch,
            codec: settings.codec,
            diff_id: diff_id.clone(),
            entry,
            role: role.clone(),
        };
        let writer = std::thread::Builder::new()
            .name(format!("layer {role}"))
            .spawn(move || {
                let _making = making;
                job.run()
            })
            .map_err(io("starting the layer's writer"))?;
        let pending = PendingLayer {
            layer,
            writer: Some(writer),
        };
        Ok((pending, tree, diff_id))
    }

    /// A layer written by `writer` (for tests of what waits for it).
    #[cfg(test)]
    pub fn from_writer(
        layer: RoleLayer,
        writer: JoinHandle<Result<(Entry, f64), BuildError>>,
    ) -> PendingLayer {
        PendingLayer {
            layer,
            writer: Some(writer),
        }
    }

    /// Whether the blob is written (and [`PendingLayer::wait`] returns at once).
    pub fn is_written(&self) -> bool {
        self.writer.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits for the blob: the stored entry, and the seconds its writing took.
    pub fn wait(mut self) -> Result<(Entry, f64), BuildError> {
        let writer = self.writer.take();
        match writer.map(JoinHandle::join) {
            Some(Ok(written)) => written,
            Some(Err(_)) => Err(BuildError::LayerWrite(format!(
                "writing the {} layer stopped unexpectedly",
                self.layer.role
            ))),
            None => Err(BuildError::LayerWrite(format!(
                "the {} layer was already taken",
                self.layer.role
            ))),
        }
    }
}

impl Drop for PendingLayer {
    /// A build that stops (a later role failed) still finishes and records the layer it was
    /// writing, so the next build reuses it; the thread never outlives the build.
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// What the writing thread owns.
struct Job {
    blobs: BlobStore,
    cache: LayerCache,
    tree: PathBuf,
    /// `SOURCE_DATE_EPOCH`, which clamps the tar's times.
    epoch: u64,
    /// The compression.
    codec: crate::compression::Codec,
    diff_id: String,
    entry: Entry,
    role: String,
}

impl Job {
    /// Writes the blob and records the entry; on failure, removes the placed folder.
    fn run(self) -> Result<(Entry, f64), BuildError> {
        let folder = self.tree.parent().map(Path::to_owned);
        let written = self.write();
        if let (Err(_), Some(folder)) = (&written, folder) {
            // Nothing half-written stays: the placed folder goes with its unwritten blob.
            let _ = std::fs::remove_dir_all(folder);
        }
        written
    }

    /// Writes the blob, checks it is the layer whose diff_id keyed the roles above, and
    /// records the entry.
    fn write(mut self) -> Result<(Entry, f64), BuildError> {
        let writing = Instant::now();
        self.entry.blob = self
            .blobs
            .write_layer(&self.tree, Source::OverlayUpper, self.epoch, self.codec)
            .map_err(io(format!("writing the {} layer", self.role)))?;
        same_diff(
            &self.role,
            &self.tree,
            &self.diff_id,
            &self.entry.blob.diff_id,
        )?;
        let stored = self
            .cache
            .record(&self.entry)
            .map_err(io("storing the layer in the cache"))?;
        Ok((stored, writing.elapsed().as_secs_f64()))
    }
}

/// The written blob's diff_id is the one found before: the folder did not change meanwhile.
fn same_diff(role: &str, tree: &Path, found: &str, written: &str) -> Result<(), BuildError> {
    match found == written {
        true => Ok(()),
        false => Err(BuildError::LayerWrite(format!(
            "the {role} layer's folder {} changed while its blob was written ({found} before, {written} after): nothing may write to the layer cache during a build",
            tree.display()
        ))),
    }
}
