//! The compile cache's entries shared through the registry cache (`--cache-from`, `--cache-to`):
//! the entries a role's compiles used are kept as one bundle per image and role, tagged
//! `compiles-<digest of the two>`, each build's replacing the one before. A runner whose role
//! runs again after an early change takes the bundle before the role runs, so its compiles hit
//! though its disk started empty. An entry still has to match its checksums when a compile uses
//! it; a bundle that does not unpack is a warning, never a failed build.

use std::path::Path;

use crate::blobs::{BlobStore, LayerBlob};
use crate::compression::Codec;
use crate::hashing::digest_of;
use crate::layer::Source;

/// The tag of the bundle of `image`'s role `role`.
pub fn bundle_tag(image: &str, role: &str) -> String {
    let digest = digest_of(format!("{image}\0{role}").as_bytes());
    format!(
        "compiles-{}",
        digest
            .trim_start_matches("sha256:")
            .get(..32)
            .unwrap_or_default()
    )
}

/// Writes the entries `keys` of the compile cache folder `dir` (those still there) as one blob
/// of `blobs`, from a tree of hard links made in `work`; `None` when none is there.
pub fn bundle(
    dir: &Path,
    keys: &[String],
    work: &Path,
    blobs: &BlobStore,
) -> std::io::Result<Option<LayerBlob>> {
    let tree = work.join("compiles");
    let mut entries = 0;
    for key in keys {
        let entry = engine::compile_cache::entry_dir(dir, key);
        let Ok(files) = std::fs::read_dir(&entry) else {
            continue;
        };
        let relative = entry.strip_prefix(dir).unwrap_or(&entry);
        let copy = tree.join(relative);
        std::fs::create_dir_all(&copy)?;
        for file in files.flatten().filter(|f| f.path().is_file()) {
            let to = copy.join(file.file_name());
            if std::fs::hard_link(file.path(), &to).is_err() {
                std::fs::copy(file.path(), &to)?;
            }
        }
        entries += 1;
    }
    if entries == 0 {
        return Ok(None);
    }
    blobs
        .write_layer(&tree, Source::Tree, 0, Codec::gzip(6))
        .map(Some)
}

/// Moves the entries unpacked in `tree` (`<xx>/<key>/...`) into the compile cache folder `dir`,
/// leaving alone the entries it has; returns how many it added.
pub fn adopt(tree: &Path, dir: &Path) -> std::io::Result<usize> {
    let mut added = 0;
    for shard in std::fs::read_dir(tree)?.flatten() {
        let name = shard.file_name().to_string_lossy().into_owned();
        if name.len() != 2 || !shard.path().is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(shard.path())?.flatten() {
            let key = entry.file_name().to_string_lossy().into_owned();
            let is_key = key.len() == 64 && key.starts_with(&name);
            let place = engine::compile_cache::entry_dir(dir, &key);
            if !is_key || place.exists() {
                continue;
            }
            std::fs::create_dir_all(dir.join(&name))?;
            std::fs::rename(entry.path(), &place)?;
            added += 1;
        }
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_holds_the_entries_named_and_adopting_it_adds_only_new_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (cache, other, work) = (
            dir.path().join("compile"),
            dir.path().join("other"),
            dir.path().join("work"),
        );
        let blobs = BlobStore::new(&dir.path().join("blobs")).expect("blobs");
        let (a, b, c) = ("a".repeat(64), "b".repeat(64), "c".repeat(64));
        for key in [&a, &b] {
            let entry = engine::compile_cache::entry_dir(&cache, key);
            std::fs::create_dir_all(&entry).expect("entry");
            std::fs::write(entry.join("obj"), format!("object {key}")).expect("obj");
        }
        let keys = [a.clone(), c.clone()];
        let blob = bundle(&cache, &keys, &work, &blobs)
            .expect("bundle")
            .expect("an entry");
        assert!(
            bundle(&cache, std::slice::from_ref(&c), &work.join("none"), &blobs)
                .expect("bundle")
                .is_none()
        );

        let unpacked = dir.path().join("unpacked");
        std::fs::create_dir_all(&unpacked).expect("mkdir");
        let fs = engine::rootfs::RootFs::plain(&unpacked).expect("fs");
        let file = std::fs::File::open(blobs.path(&blob.digest).expect("path")).expect("blob");
        let reader = blob
            .compression
            .reader(std::io::BufReader::new(file))
            .expect("reader");
        engine::archive::extract_tar(
            reader,
            &fs,
            Path::new("/"),
            engine::archive::Limits::default(),
        )
        .expect("unpack");
        let kept = engine::compile_cache::entry_dir(&other, &b);
        std::fs::create_dir_all(&kept).expect("entry");
        assert_eq!(adopt(&unpacked, &other).expect("adopt"), 1);
        let adopted = engine::compile_cache::entry_dir(&other, &a);
        assert_eq!(
            std::fs::read_to_string(adopted.join("obj")).expect("obj"),
            format!("object {a}")
        );
        assert!(!engine::compile_cache::entry_dir(&other, &c).exists());
        assert_eq!(bundle_tag("img", "nvidia"), bundle_tag("img", "nvidia"));
        assert_ne!(bundle_tag("img", "nvidia"), bundle_tag("img", "mofed"));
        assert!(bundle_tag("img", "nvidia").starts_with("compiles-"));
    }
}
