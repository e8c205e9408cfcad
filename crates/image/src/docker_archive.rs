//! The docker-archive (what `docker save` writes and Warewulf imports): each layer's tar,
//! uncompressed, then the image config and `manifest.json`, written to a temporary file beside
//! the destination (`.<name>.partial-<pid>`) and renamed over it. Layers are appended one at a
//! time, so a build can write the archive's first layers while its last roles still run
//! (`build::archive_stream`). A partial file is removed when its archive is dropped unfinished,
//! on Ctrl-C ([`remove_unfinished`]), and, after a SIGKILL, by the next archive written there.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::Serialize;

use crate::blobs::{BlobStore, LayerBlob};
use crate::oci::{ImageSpec, Written};

/// A docker-archive being written: the layers so far, in a temporary file.
pub struct DockerArchive {
    builder: Option<tar::Builder<BufWriter<File>>>,
    partial: PathBuf,
    epoch: u64,
    layer_names: Vec<String>,
}

/// The partial files of the archives this process is writing.
static UNFINISHED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Removes the partial files of the archives this process is writing (before it exits on a
/// signal).
pub fn remove_unfinished() {
    let unfinished = UNFINISHED.lock().unwrap_or_else(|e| e.into_inner());
    for partial in unfinished.iter() {
        let _ = std::fs::remove_file(partial);
    }
}

fn forget(partial: &Path) {
    let mut unfinished = UNFINISHED.lock().unwrap_or_else(|e| e.into_inner());
    unfinished.retain(|p| p != partial);
}

/// Removes the partial files beside `dest` that processes no longer running left.
fn remove_stale(parent: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(prefix) else {
            continue;
        };
        let alive = pid.parse::<u32>().is_ok() && Path::new("/proc").join(pid).exists();
        if !alive {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[derive(Serialize)]
struct ArchiveManifest<'a> {
    #[serde(rename = "Config")]
    config: String,
    #[serde(rename = "RepoTags")]
    repo_tags: Vec<&'a str>,
    #[serde(rename = "Layers")]
    layers: Vec<String>,
}

impl DockerArchive {
    /// Starts an archive whose file will be `dest` (its temporary file is made beside it).
    pub fn create(dest: &Path, epoch: u64) -> std::io::Result<DockerArchive> {
        let parent = dest.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)?;
        let name = dest.file_name().unwrap_or_default().to_string_lossy();
        let prefix = format!(".{name}.partial-");
        remove_stale(parent, &prefix);
        let partial = parent.join(format!("{prefix}{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&partial)?;
        UNFINISHED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(partial.clone());
        Ok(DockerArchive {
            builder: Some(tar::Builder::new(BufWriter::with_capacity(1 << 20, file))),
            partial,
            epoch,
            layer_names: Vec::new(),
        })
    }

    /// Appends a layer: its folder, and its tar decompressed from `blob` (its file in the blob
    /// store) on another core while the previous chunk is written. `stop` set ends it with an
    /// error (the archive is then thrown away).
    pub fn append_layer(
        &mut self,
        layer: &LayerBlob,
        blob: &Path,
        stop: &AtomicBool,
    ) -> std::io::Result<()> {
        let hex = layer.diff_id.trim_start_matches("sha256:");
        let name = format!("{hex}/layer.tar");
        let mut header = tar_header(0, self.epoch, tar::EntryType::Directory);
        let builder = self.builder.as_mut().ok_or_else(finished)?;
        builder.append_data(&mut header, format!("{hex}/"), std::io::empty())?;
        let mut header = tar_header(layer.diff_size, self.epoch, tar::EntryType::Regular);
        let blob = File::open(blob)?;
        std::thread::scope(|scope| {
            let reader = crate::read_ahead::ReadAhead::spawn(scope, move || {
                layer
                    .compression
                    .reader(std::io::BufReader::with_capacity(1 << 20, blob))
            });
            let reader = Stoppable {
                inner: reader,
                stop,
            };
            builder.append_data(&mut header, &name, reader.take(layer.diff_size))
        })?;
        self.layer_names.push(name);
        Ok(())
    }

    /// Ends the archive with the image config and `manifest.json` (naming `repo_tag`), syncs it
    /// and renames it to `dest`.
    pub fn finish(mut self, dest: &Path, written: &Written, repo_tag: &str) -> std::io::Result<()> {
        let mut builder = self.builder.take().ok_or_else(finished)?;
        let epoch = self.epoch;
        let config_name = format!("{}.json", written.config.trim_start_matches("sha256:"));
        let config = &written.config_bytes;
        let mut header = tar_header(config.len() as u64, epoch, tar::EntryType::Regular);
        builder.append_data(&mut header, &config_name, config.as_slice())?;
        let manifest = vec![ArchiveManifest {
            config: config_name,
            repo_tags: vec![repo_tag],
            layers: std::mem::take(&mut self.layer_names),
        }];
        let manifest = crate::oci::json(&manifest)?;
        let mut header = tar_header(manifest.len() as u64, epoch, tar::EntryType::Regular);
        builder.append_data(&mut header, "manifest.json", manifest.as_slice())?;
        let mut out = builder.into_inner()?;
        out.flush()?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        crate::blobs::readable(&self.partial)?;
        std::fs::rename(&self.partial, dest)?;
        forget(&self.partial);
        Ok(())
    }
}

impl Drop for DockerArchive {
    /// An archive dropped unfinished (or whose rename failed) leaves no partial file.
    fn drop(&mut self) {
        if UNFINISHED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&self.partial)
        {
            let _ = std::fs::remove_file(&self.partial);
            forget(&self.partial);
        }
    }
}

fn finished() -> std::io::Error {
    std::io::Error::other("the docker-archive is already finished")
}

/// Writes the docker-archive of `spec` at `dest` in one go, with uncompressed layers, through a
/// temporary file and a rename.
pub fn write(
    dest: &Path,
    blobs: &BlobStore,
    spec: &ImageSpec,
    written: &Written,
    repo_tag: &str,
) -> std::io::Result<()> {
    let mut archive = DockerArchive::create(dest, spec.epoch)?;
    let never = AtomicBool::new(false);
    for (layer, _) in &spec.layers {
        archive.append_layer(layer, &blobs.path(&layer.digest)?, &never)?;
    }
    archive.finish(dest, written, repo_tag)
}

/// A reader that fails once `stop` is set.
struct Stoppable<'a, R> {
    inner: R,
    stop: &'a AtomicBool,
}

impl<R: Read> Read for Stoppable<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(std::io::Error::other(
                "the docker-archive was no longer wanted",
            ));
        }
        self.inner.read(buf)
    }
}

fn tar_header(size: u64, epoch: u64, kind: tar::EntryType) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_size(size);
    header.set_mode(if kind == tar::EntryType::Directory {
        0o755
    } else {
        0o644
    });
    header.set_mtime(epoch);
    header.set_uid(0);
    header.set_gid(0);
    header
}
