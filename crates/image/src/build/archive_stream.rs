//! The docker-archive written while the roles run. Once a role runs (a build that only reuses
//! layers may well find its archive current), each layer that enters the image is appended to
//! the archive on a thread of its own at the lowest priority: it takes the cores the roles
//! leave idle (a DKMS compile's serial parts, dracut, apt's waits), and what is left when the
//! roles end is the last layers. After verify, the config and manifest end the archive; a build
//! that fails, or finds its output current, throws it away. It is streamed only where the
//! output's filesystem has room to spare ([`room_for`]): on a tight disk the roles keep the
//! space, and the archive is written after verify, behind its room check.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use rustix::process::Pid;

use crate::blobs::LayerBlob;
use crate::docker_archive::DockerArchive;
use crate::oci::{ImageSpec, Written};

/// The nice value the thread writes at while roles run (the lowest priority there is).
const WHILE_ROLES_RUN: i32 = 19;

/// Free space the roles to come keep on the output's filesystem, beyond the archive so far:
/// below it, the archive is not streamed.
pub(super) const KEPT_FOR_THE_ROLES: u64 = 8 << 30;

/// Whether `dest`'s filesystem has room for `archive_so_far` bytes and `kept` more (true when
/// its free space cannot be read: the write then says what failed).
pub(super) fn room_for(dest: &Path, archive_so_far: u64, kept: u64) -> bool {
    super::room::free_bytes(dest).is_none_or(|free| free >= archive_so_far.saturating_add(kept))
}

/// A docker-archive being written on its own thread, layer by layer.
pub(super) struct ArchiveStream {
    layers: Option<Sender<(LayerBlob, PathBuf)>>,
    sent: Vec<String>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<std::io::Result<DockerArchive>>>,
    thread_id: Arc<OnceLock<Pid>>,
}

impl ArchiveStream {
    /// Starts the archive that will be `dest`.
    pub fn start(dest: &Path, epoch: u64) -> std::io::Result<ArchiveStream> {
        let mut archive = DockerArchive::create(dest, epoch)?;
        let (layers, receive) = channel::<(LayerBlob, PathBuf)>();
        let stop = Arc::new(AtomicBool::new(false));
        let thread_id = Arc::new(OnceLock::new());
        let (stopped, id) = (stop.clone(), thread_id.clone());
        let thread = std::thread::Builder::new()
            .name("docker-archive".into())
            .spawn(move || {
                let me = rustix::thread::gettid();
                let _ = id.set(me);
                let _ = rustix::process::setpriority_process(Some(me), WHILE_ROLES_RUN);
                for (layer, blob) in receive {
                    archive.append_layer(&layer, &blob, &stopped)?;
                }
                Ok(archive)
            })?;
        Ok(ArchiveStream {
            layers: Some(layers),
            sent: Vec::new(),
            stop,
            thread: Some(thread),
            thread_id,
        })
    }

    /// Appends the next layer of the image (its blob is the file `blob`).
    pub fn push(&mut self, layer: &LayerBlob, blob: PathBuf) {
        self.sent.push(layer.digest.clone());
        if let Some(layers) = &self.layers {
            // A thread that stopped on an error says so when the archive is finished.
            let _ = layers.send((layer.clone(), blob));
        }
    }

    /// Ends the archive as that of `spec` and renames it to `dest`. Returns false, with nothing
    /// written, when the layers it was given are not `spec`'s (the caller writes it in one go).
    pub fn finish(
        mut self,
        dest: &Path,
        spec: &ImageSpec,
        written: &Written,
        repo_tag: &str,
    ) -> std::io::Result<bool> {
        let wanted = spec.layers.iter().map(|(layer, _)| &layer.digest);
        if !wanted.eq(self.sent.iter()) {
            return Ok(false);
        }
        // The roles are done: what is left is written at the build's own priority (lowering a
        // priority needs no privilege, raising it back does: without it, it stays low).
        if let Some(id) = self.thread_id.get() {
            let _ = rustix::process::setpriority_process(Some(*id), 0);
        }
        drop(self.layers.take());
        let archive = match self.thread.take().map(JoinHandle::join) {
            Some(Ok(archive)) => archive?,
            _ => return Err(std::io::Error::other("the docker-archive's thread failed")),
        };
        archive.finish(dest, written, repo_tag)?;
        Ok(true)
    }
}

impl Drop for ArchiveStream {
    /// An archive not finished is stopped and its partial file removed.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        drop(self.layers.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blobs::BlobStore;
    use crate::compression::Codec;
    use crate::layer::Source;

    /// Two small layers in a blob store, and the spec and config of their image.
    fn image(dir: &Path) -> (BlobStore, ImageSpec, Written) {
        let blobs = BlobStore::new(&dir.join("blobs")).expect("store");
        let mut layers = Vec::new();
        for (i, text) in ["one", "two"].iter().enumerate() {
            let tree = dir.join(format!("tree{i}"));
            std::fs::create_dir_all(tree.join("etc")).expect("mkdir");
            std::fs::write(tree.join("etc").join(text), text.repeat(1000)).expect("write");
            let blob = blobs
                .write_layer(&tree, Source::Tree, 1, Codec::gzip(1))
                .expect("layer");
            layers.push((blob, format!("role {text}")));
        }
        let spec = ImageSpec {
            layers,
            labels: Default::default(),
            epoch: 1,
        };
        let written = crate::oci::write_image(&blobs, &spec).expect("image");
        (blobs, spec, written)
    }

    fn partials(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .expect("read")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".partial-"))
            .collect()
    }

    #[test]
    fn streamed_archive_is_the_one_written_in_one_go() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (blobs, spec, written) = image(dir.path());
        let whole = dir.path().join("out/whole.tar");
        crate::docker_archive::write(&whole, &blobs, &spec, &written, "x:latest").expect("write");
        let streamed = dir.path().join("out/streamed.tar");
        let mut stream = ArchiveStream::start(&streamed, 1).expect("start");
        for (layer, _) in &spec.layers {
            stream.push(layer, blobs.path(&layer.digest).expect("path"));
        }
        assert!(stream
            .finish(&streamed, &spec, &written, "x:latest")
            .expect("finish"));
        let read = |p: &Path| std::fs::read(p).expect("read");
        assert_eq!(read(&streamed), read(&whole));
        assert!(partials(&dir.path().join("out")).is_empty());
    }

    #[test]
    fn other_layers_write_nothing_and_a_dropped_stream_leaves_no_partial_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (blobs, spec, written) = image(dir.path());
        let dest = dir.path().join("out/image.tar");
        let mut stream = ArchiveStream::start(&dest, 1).expect("start");
        let (first, _) = &spec.layers[0];
        stream.push(first, blobs.path(&first.digest).expect("path"));
        assert_eq!(partials(&dir.path().join("out")).len(), 1);
        let done = stream
            .finish(&dest, &spec, &written, "x:latest")
            .expect("finish");
        assert!(!done, "one layer of two is not the image");
        assert!(!dest.exists());
        assert!(partials(&dir.path().join("out")).is_empty());
    }

    #[test]
    fn a_tight_disk_keeps_its_room_for_the_roles() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dest = dir.path().join("out/image.tar");
        assert!(room_for(&dest, 0, 0));
        assert!(!room_for(&dest, u64::MAX / 2, KEPT_FOR_THE_ROLES));
        assert!(!room_for(&dest, 0, u64::MAX));
    }

    #[test]
    fn a_partial_file_of_a_process_gone_is_removed_by_the_next_archive() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("out");
        std::fs::create_dir_all(&out).expect("mkdir");
        // No process has pid 0 in /proc: the file is a killed build's.
        std::fs::write(out.join(".image.tar.partial-0"), b"half").expect("write");
        std::fs::write(out.join(".other.tar.partial-0"), b"other").expect("write");
        let stream = ArchiveStream::start(&out.join("image.tar"), 1).expect("start");
        drop(stream);
        assert_eq!(partials(&out), vec![".other.tar.partial-0".to_string()]);
    }
}
