//! Room on disk: before a step writes gigabytes (the staged rootfs, an output), the space it
//! needs is compared with what its filesystem has free, so a full disk stops the build with
//! the path and the figures instead of a half-written file.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::error::BuildError;
use crate::oci::ImageSpec;

/// Kept free on top of an estimate: tar headers, metadata, and what other writers need.
const MARGIN: u64 = 64 << 20;

/// Bytes free for an unprivileged writer on the filesystem holding `path` (or its nearest
/// existing parent).
pub fn free_bytes(path: &Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let stat = rustix::fs::statvfs(existing).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Fails with `BuildError::NoSpace` when `dir`'s filesystem has less than `needed` bytes free
/// (plus a margin) for `what`.
pub fn ensure(dir: &Path, needed: u64, what: &str) -> Result<(), BuildError> {
    let Some(free) = free_bytes(dir) else {
        return Ok(());
    };
    if free >= needed.saturating_add(MARGIN) {
        return Ok(());
    }
    Err(BuildError::NoSpace(format!(
        "{}: {what} needs about {}, and its filesystem has {} free. Free space there (`imgbuild cache gc --max SIZE` if it holds the cache) or choose another --out; the layers are cached, so the rerun starts here",
        dir.display(),
        gigabytes(needed),
        gigabytes(free)
    )))
}

/// The bytes the image's rootfs takes unpacked (the sum of its layers' tars, an overestimate
/// where upper layers replace lower files).
pub fn unpacked_size(spec: &ImageSpec) -> u64 {
    spec.layers.iter().map(|(layer, _)| layer.diff_size).sum()
}

/// The bytes of the image's compressed layers, which a docker-archive copies.
pub fn compressed_size(spec: &ImageSpec) -> u64 {
    spec.layers.iter().map(|(layer, _)| layer.size).sum()
}

/// Whether two paths (or their nearest existing parents) are on one filesystem, where the OCI
/// layout hard-links the cached blobs instead of copying them.
pub fn same_filesystem(a: &Path, b: &Path) -> bool {
    let device = |p: &Path| {
        p.ancestors()
            .find(|p| p.exists())
            .and_then(|p| std::fs::metadata(p).ok())
            .map(|m| m.dev())
    };
    matches!((device(a), device(b)), (Some(x), Some(y)) if x == y)
}

/// Bytes for people: `1.2 GB`, `340 MB`.
pub fn gigabytes(bytes: u64) -> String {
    if bytes >= 1_000_000_000 {
        format!("{:.1} GB", bytes as f64 / 1e9)
    } else {
        format!("{} MB", bytes.div_ceil(1_000_000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_that_does_not_fit_is_refused_with_the_figures() {
        let dir = tempfile::tempdir().expect("tempdir");
        let free = free_bytes(dir.path()).expect("statvfs");
        assert!(ensure(dir.path(), 1 << 20, "a small file").is_ok());
        let err = ensure(&dir.path().join("not/yet"), free, "the docker-archive")
            .expect_err("more than is free");
        let text = err.to_string();
        assert!(text.contains("the docker-archive needs about"), "{text}");
        assert!(text.contains("not/yet"), "{text}");
        assert!(same_filesystem(dir.path(), &dir.path().join("a/b")));
        assert_eq!(gigabytes(1_500_000_000), "1.5 GB");
        assert_eq!(gigabytes(340_000_001), "341 MB");
    }
}
