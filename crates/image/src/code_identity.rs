//! The identity of the code that makes a layer: a digest of the engine's, the modules', the
//! planner's and the Ansible language's (`crates/ansible`) sources, computed when imgbuild is compiled (`build.rs` includes this file). It is part of
//! every layer's cache key, so a layer made by older code is never reused, locally or from
//! the registry, once the code that runs tasks or expands them changes.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Every file below `dir`, sorted by path.
fn files_below(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files_below(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// The sha256 (hex) of the relative names and bytes of every file below each of `dirs`.
pub fn tree_digest(dirs: &[PathBuf]) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    for dir in dirs {
        let mut files = Vec::new();
        files_below(dir, &mut files)?;
        files.sort();
        for file in files {
            let name = file.strip_prefix(dir).unwrap_or(&file);
            hasher.update(name.to_string_lossy().as_bytes());
            hasher.update([0]);
            let bytes = std::fs::read(&file)?;
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(&bytes);
        }
        hasher.update([1]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_change_to_the_sources_changes_the_identity() {
        let dir = tempfile::tempdir().expect("tempdir");
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("modules")).expect("mkdir");
        std::fs::write(src.join("lib.rs"), "pub mod modules;\n").expect("write");
        std::fs::write(src.join("modules/copy.rs"), "fn copy() {}\n").expect("write");
        let dirs = [src.clone()];
        let first = tree_digest(&dirs).expect("digest");
        assert_eq!(first.len(), 64);
        assert_eq!(tree_digest(&dirs).expect("again"), first, "stable");
        std::fs::write(src.join("modules/copy.rs"), "fn copy() { }\n").expect("edit");
        let edited = tree_digest(&dirs).expect("edited");
        assert_ne!(edited, first);
        std::fs::write(src.join("modules/new.rs"), "").expect("add");
        assert_ne!(tree_digest(&dirs).expect("added"), edited);
    }
}
