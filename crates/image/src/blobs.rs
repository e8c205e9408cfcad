//! Content-addressed blobs: layers written as tar → hash (diff_id) → parallel gzip or zstd → hash
//! (digest) → temp file, in one pass, then renamed to `sha256/<hex>`. Memory does not grow with
//! the tree.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::compression::{Codec, Compression, Encoder};
use crate::hashing::HashingWriter;
use crate::layer::{LayerWriter, Source};

/// A written layer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerBlob {
    /// `sha256:` of the compressed blob.
    pub digest: String,
    /// Size of the compressed blob.
    pub size: u64,
    /// `sha256:` of the uncompressed tar.
    pub diff_id: String,
    /// Size of the uncompressed tar.
    pub diff_size: u64,
    /// How the blob is compressed.
    #[serde(default)]
    pub compression: Compression,
}

/// Makes a finished file readable by everyone (temporary files start as 0600).
pub fn readable(path: &Path) -> std::io::Result<()> {
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o644))
}

/// The diff_id (`sha256:` of the uncompressed tar) and the tar's size of the layer that
/// [`BlobStore::write_layer`] writes from the same `tree`, `source` and `epoch`, found without
/// compressing or writing anything: what the next role's cache key needs while the blob itself
/// is written on another thread.
pub fn diff_of(tree: &Path, source: Source, epoch: u64) -> std::io::Result<(String, u64)> {
    let hashing = HashingWriter::new(std::io::sink());
    let mut layer = LayerWriter::new(BufWriter::with_capacity(1 << 20, hashing), epoch, source);
    layer.add_tree(tree)?;
    let hashing = layer.finish()?.into_inner().map_err(|e| e.into_error())?;
    let (_, diff_id, size) = hashing.finish();
    Ok((diff_id, size))
}

/// A folder of blobs named by digest (`sha256/<hex>`).
#[derive(Debug, Clone)]
pub struct BlobStore {
    dir: PathBuf,
}

impl BlobStore {
    /// The store at `dir` (created if missing).
    pub fn new(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir.join("sha256"))?;
        Ok(Self {
            dir: dir.to_owned(),
        })
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `digest`, checked first as [`BlobStore::checked_path`] does; a digest that
    /// is not `sha256:<64 lowercase hex>` is an `InvalidData` error saying so.
    pub fn path(&self, digest: &str) -> std::io::Result<PathBuf> {
        self.checked_path(digest)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }

    /// The file of a digest (from a record, a registry, an image): checked first, so it names
    /// a file in the store (`sha256` only) and nothing else.
    pub fn checked_path(&self, digest: &str) -> Result<PathBuf, oci_layout::DigestError> {
        Ok(self.digest_path(&oci_layout::Digest::parse(digest)?.sha256()?))
    }

    /// The file of a checked `digest`: `sha256/<hex>` under the store.
    pub fn digest_path(&self, digest: &oci_layout::Digest) -> PathBuf {
        digest.blob_path(&self.dir)
    }

    /// Whether the store holds `digest`.
    pub fn has(&self, digest: &str) -> bool {
        self.path(digest).is_ok_and(|path| path.is_file())
    }

    /// Writes a folder tree as a layer compressed with `codec`.
    pub fn write_layer(
        &self,
        tree: &Path,
        source: Source,
        epoch: u64,
        codec: Codec,
    ) -> std::io::Result<LayerBlob> {
        let temp = tempfile::NamedTempFile::new_in(self.dir.join("sha256"))?;
        let file = BufWriter::with_capacity(1 << 20, temp.reopen()?);
        let compressed = HashingWriter::new(file);
        let gz = Encoder::new(compressed, codec)?;
        let uncompressed = HashingWriter::new(BufWriter::with_capacity(1 << 20, gz));
        let mut layer = LayerWriter::new(uncompressed, epoch, source);
        layer.add_tree(tree)?;
        let uncompressed = layer.finish()?;
        let (gz, diff_id, diff_size) = uncompressed.finish();
        let gz = gz.into_inner().map_err(|e| e.into_error())?;
        let compressed = gz.finish()?;
        let (file, digest, size) = compressed.finish();
        let file = file.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        readable(temp.path())?;
        temp.persist(self.path(&digest)?).map_err(|e| e.error)?;
        Ok(LayerBlob {
            digest,
            size,
            diff_id,
            diff_size,
            compression: codec.compression,
        })
    }

    /// Stores bytes (a config or manifest); returns the digest. A blob already there is marked
    /// used now, so the cache's collector keeps it for this build.
    pub fn write_bytes(&self, bytes: &[u8]) -> std::io::Result<String> {
        let digest = crate::hashing::digest_of(bytes);
        let path = self.path(&digest)?;
        if path.is_file() {
            crate::used::touch(&path);
        } else {
            let mut temp = tempfile::NamedTempFile::new_in(self.dir.join("sha256"))?;
            temp.write_all(bytes)?;
            readable(temp.path())?;
            temp.persist(&path).map_err(|e| e.error)?;
        }
        Ok(digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_names_a_file_in_the_store_only_when_checked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = BlobStore::new(dir.path()).expect("store");
        let digest = store.write_bytes(b"config").expect("write");
        let path = store.path(&digest).expect("path");
        assert_eq!(path.parent(), Some(dir.path().join("sha256").as_path()));
        assert!(store.has(&digest));
        for bad in ["sha256:../../etc/passwd", "sha256:c0", "c0"] {
            let error = store.path(bad).expect_err(bad);
            assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
            assert!(error.to_string().contains(bad), "{error}");
            assert!(!store.has(bad));
        }
    }

    #[test]
    fn the_diff_found_without_compressing_is_the_written_layer_s() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join("etc/a")).expect("mkdir");
        std::fs::write(tree.join("etc/a/file"), vec![7u8; 300_000]).expect("write");
        std::os::unix::fs::symlink("a/file", tree.join("etc/link")).expect("symlink");
        let store = BlobStore::new(&dir.path().join("blobs")).expect("store");
        for codec in [
            Codec::gzip(6),
            Codec {
                compression: Compression::Zstd,
                level: 3,
            },
        ] {
            let blob = store
                .write_layer(&tree, Source::OverlayUpper, 1_700_000_000, codec)
                .expect("layer");
            let diff = diff_of(&tree, Source::OverlayUpper, 1_700_000_000).expect("diff");
            assert_eq!(diff, (blob.diff_id.clone(), blob.diff_size), "{codec:?}");
        }
        std::fs::write(tree.join("etc/a/file"), b"changed").expect("write");
        let changed = diff_of(&tree, Source::OverlayUpper, 1_700_000_000).expect("diff");
        let blob = store
            .write_layer(&tree, Source::OverlayUpper, 1_700_000_000, Codec::gzip(6))
            .expect("layer");
        assert_eq!(changed.0, blob.diff_id);
        assert_ne!(
            changed.0,
            diff_of(&tree, Source::OverlayUpper, 1).expect("diff").0,
            "the epoch is in the tar"
        );
    }
}
