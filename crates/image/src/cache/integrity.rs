//! Is a cache entry still what was stored? A blob is named by its sha256, so it can be checked
//! in full; that costs a read of every byte, so on reuse the blob's stamp (inode, size,
//! modification time) is compared with the one recorded when it was last checked, and only a
//! changed stamp costs the full hash (a write changes the stamp; `cache verify` hashes every
//! blob whatever its stamp). A layer's folder has no digest of its own: its stamp is a digest
//! of every entry's name, type, mode, owner, size, modification time and link target, recorded
//! when it is stored and compared on reuse (a stat of each file, no read).

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What a file looked like when its content was last checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since 1970.
    pub mtime_ns: i128,
}

impl FileStamp {
    /// The stamp of `path` now.
    pub fn of(path: &Path) -> std::io::Result<FileStamp> {
        let meta = std::fs::metadata(path)?;
        Ok(FileStamp {
            ino: meta.ino(),
            size: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        })
    }
}

/// The `sha256:<hex>` of a file's bytes.
pub fn file_digest(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(format!("sha256:{:x}", hasher.finalize()))
}

/// Checks the blob at `path` against `digest` and `size`: by its stamp when it matches
/// `recorded`, else by hashing it. Returns the stamp to record, or what is wrong.
pub fn check_blob(
    path: &Path,
    digest: &str,
    size: u64,
    recorded: Option<&FileStamp>,
) -> Result<FileStamp, String> {
    let stamp = FileStamp::of(path).map_err(|e| format!("its blob {digest}: {e}"))?;
    if stamp.size != size {
        return Err(format!(
            "its blob {digest} has {} bytes, not {size}",
            stamp.size
        ));
    }
    if recorded == Some(&stamp) {
        return Ok(stamp);
    }
    let actual = file_digest(path).map_err(|e| format!("reading its blob {digest}: {e}"))?;
    if actual != digest {
        return Err(format!("its blob {digest} now hashes to {actual}"));
    }
    Ok(stamp)
}

/// The stamp of a folder tree: a digest over each entry's path, type, mode, owner, size (of
/// files), modification time and link target, in name order.
pub fn tree_stamp(root: &Path) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    add_dir(&mut hasher, root, Path::new(""))?;
    Ok(format!("{TREE_STAMP_FORMAT}sha256:{:x}", hasher.finalize()))
}

/// The prefix of this version's tree stamps. A stamp recorded in another format cannot be
/// compared: it is taken as unchanged and recorded again, so a new imgbuild does not drop a
/// whole cache.
const TREE_STAMP_FORMAT: &str = "v2:";

/// Whether a folder changed since `recorded` was taken, given its stamp `now`.
pub fn tree_changed(recorded: &str, now: &str) -> bool {
    recorded.trim().starts_with(TREE_STAMP_FORMAT) && recorded.trim() != now
}

fn add_dir(hasher: &mut Sha256, root: &Path, relative: &Path) -> std::io::Result<()> {
    let mut names: Vec<_> = std::fs::read_dir(root.join(relative))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    names.sort();
    for name in names {
        let path = relative.join(&name);
        let full = root.join(&path);
        let meta = std::fs::symlink_metadata(&full)?;
        let target = if meta.file_type().is_symlink() {
            std::fs::read_link(&full)?.to_string_lossy().into_owned()
        } else {
            String::new()
        };
        // A folder's size is its filesystem's business (it does not shrink when entries go).
        let size = if meta.is_dir() { 0 } else { meta.len() };
        let line = format!(
            "{}\0{:o}\0{}:{}\0{size}\0{}.{}\0{}\0{target}\n",
            path.display(),
            meta.mode(),
            meta.uid(),
            meta.gid(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.rdev(),
        );
        hasher.update(line.as_bytes());
        if meta.is_dir() {
            add_dir(hasher, root, &path)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flipped_byte_is_found_by_the_stamp_then_the_hash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blob = dir.path().join("blob");
        std::fs::write(&blob, b"layer bytes").expect("write");
        let digest = file_digest(&blob).expect("digest");
        let stamp = check_blob(&blob, &digest, 11, None).expect("whole");
        assert_eq!(check_blob(&blob, &digest, 11, Some(&stamp)), Ok(stamp));
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(&blob, b"layer bytez").expect("flip");
        let err = check_blob(&blob, &digest, 11, Some(&stamp)).expect_err("flipped");
        assert!(err.contains("now hashes to"), "{err}");
        std::fs::write(&blob, b"layer").expect("truncate");
        let err = check_blob(&blob, &digest, 11, Some(&stamp)).expect_err("short");
        assert!(err.contains("has 5 bytes, not 11"), "{err}");
    }

    #[test]
    fn a_tree_s_stamp_changes_with_any_file_of_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("etc")).expect("mkdir");
        std::fs::write(dir.path().join("etc/a"), "1").expect("write");
        std::os::unix::fs::symlink("a", dir.path().join("etc/b")).expect("link");
        let before = tree_stamp(dir.path()).expect("stamp");
        assert!(!tree_changed(
            &before,
            &tree_stamp(dir.path()).expect("stamp")
        ));
        std::fs::write(dir.path().join("etc/a"), "22").expect("write");
        assert!(tree_changed(
            &before,
            &tree_stamp(dir.path()).expect("stamp")
        ));
        assert!(
            !tree_changed("sha256:older-format", &before),
            "an older stamp is recorded again, not taken for damage"
        );
    }
}
