//! `imgbuild cache verify`: every entry of the cache checked in full, with no build running.
//! Blobs, downloads and pulled registry blobs are hashed and compared with their names; layers
//! and bases are then checked against their records and folder stamps (see `integrity`).
//! Whatever is damaged is removed, so the next build makes or fetches it again.

use std::path::Path;

use super::{in_use_file, integrity, LayerCache};

/// A damaged entry that was removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The entry (`blob sha256:…`, `layer <key>`, `base <key>`, `download sha256:…`).
    pub entry: String,
    /// What was wrong with it.
    pub problem: String,
}

/// What `verify_all` checked and removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Entries checked.
    pub checked: usize,
    /// Damaged entries, removed.
    pub removed: Vec<Finding>,
}

impl LayerCache {
    /// Checks every entry in full and removes the damaged ones. `None` while a build holds the
    /// cache (a build's entries are unfinished until it ends).
    pub fn verify_all(&self) -> std::io::Result<Option<Verified>> {
        let lock = in_use_file(&self.dir)?;
        if rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
            return Ok(None);
        }
        let mut verified = Verified::default();
        for (folder, kind) in [
            ("blobs/sha256", "blob"),
            ("downloads/sha256", "download"),
            ("registry/sha256", "pulled blob"),
        ] {
            self.verify_named_files(&self.dir.join(folder), kind, &mut verified)?;
        }
        self.verify_layers(&mut verified)?;
        self.verify_bases(&mut verified)?;
        Ok(Some(verified))
    }

    /// Files named by the sha256 of their bytes (a `sha256:` prefix or bare hex).
    fn verify_named_files(
        &self,
        dir: &Path,
        kind: &str,
        verified: &mut Verified,
    ) -> std::io::Result<()> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !entry.path().is_file() {
                continue;
            }
            verified.checked += 1;
            let digest = format!("sha256:{name}");
            let actual = integrity::file_digest(&entry.path())?;
            if actual != digest {
                std::fs::remove_file(entry.path())?;
                verified.removed.push(Finding {
                    entry: format!("{kind} {digest}"),
                    problem: format!("its content hashes to {actual}"),
                });
            }
        }
        Ok(())
    }

    fn verify_layers(&self, verified: &mut Verified) -> std::io::Result<()> {
        for entry in std::fs::read_dir(self.dir.join("layers"))?.flatten() {
            let key = entry.file_name().to_string_lossy().into_owned();
            if key.starts_with('.') {
                continue;
            }
            verified.checked += 1;
            // Blobs were hashed above: a stamp that still matches is enough here.
            if let Err(damage) = self.check(&entry.path(), false) {
                verified.removed.push(Finding {
                    entry: format!("layer {key}"),
                    problem: damage.remove(&entry.path()),
                });
            }
        }
        Ok(())
    }

    /// Each base: its tree's stamp is the one recorded when it was made (else the whole base
    /// goes), and each record (one per epoch) names a blob that is there with its size.
    fn verify_bases(&self, verified: &mut Verified) -> std::io::Result<()> {
        let Ok(bases) = std::fs::read_dir(self.dir.join("bases")) else {
            return Ok(());
        };
        for base in bases.flatten().filter(|b| b.path().is_dir()) {
            let key = base.file_name().to_string_lossy().into_owned();
            let tree = base.path().join("tree");
            let records = std::fs::read_dir(base.path())?
                .flatten()
                .any(|f| f.file_name().to_string_lossy().starts_with("layer-"));
            if !tree.is_dir() && !records {
                // An unfinished base (its make failed or was stopped): a leftover, not damage.
                std::fs::remove_dir_all(base.path())?;
                continue;
            }
            verified.checked += 1;
            let now = integrity::tree_stamp(&tree).ok();
            let recorded = std::fs::read_to_string(base.path().join("tree.stamp")).ok();
            let problem = match (&recorded, &now) {
                (_, None) => Some("its folder is missing"),
                (Some(recorded), Some(now)) if integrity::tree_changed(recorded, now) => {
                    Some("a file in its folder changed after it was made")
                }
                _ => None,
            };
            if let Some(problem) = problem {
                std::fs::remove_dir_all(base.path())?;
                verified.removed.push(Finding {
                    entry: format!("base {key}"),
                    problem: problem.into(),
                });
                continue;
            }
            for record in std::fs::read_dir(base.path())?.flatten() {
                if !record.file_name().to_string_lossy().starts_with("layer-") {
                    continue;
                }
                let problem = match crate::base::BaseRecord::read(&record.path()) {
                    None => Some("its record is damaged".to_owned()),
                    Some(cached) => record_problem(&cached, self),
                };
                if let Some(problem) = problem {
                    std::fs::remove_file(record.path())?;
                    verified.removed.push(Finding {
                        entry: format!("base {key}"),
                        problem,
                    });
                }
            }
        }
        Ok(())
    }
}

/// What is wrong with one base record: a blob missing or of another size.
fn record_problem(cached: &crate::base::BaseRecord, cache: &LayerCache) -> Option<String> {
    cached.layers.iter().find_map(|layer| {
        let (digest, size) = (&layer.blob.digest, layer.blob.size);
        let path = match cache.blob_path(digest) {
            Ok(path) => path,
            Err(e) => return Some(format!("its record names no blob: {e}")),
        };
        match std::fs::metadata(path) {
            Ok(meta) if meta.len() == size => None,
            Ok(meta) => Some(format!(
                "its blob {digest} has {} bytes, not {size}",
                meta.len()
            )),
            Err(_) => Some(format!("its blob {digest} is missing")),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blobs::BlobStore;
    use crate::cache::{Entry, Inputs, Lookup};
    use crate::compression::Codec;
    use crate::layer::Source;

    /// A cache holding one real layer (a small tree and its blob).
    fn cache_with_layer(dir: &Path, name: &str) -> (LayerCache, Inputs, Entry) {
        let cache = LayerCache::new(dir).expect("cache");
        let blobs = BlobStore::new(&dir.join("blobs")).expect("blobs");
        let tree = dir.join(format!("tree-{name}"));
        std::fs::create_dir_all(tree.join("etc")).expect("tree");
        std::fs::write(tree.join("etc/motd"), format!("hello {name}\n")).expect("file");
        let blob = blobs
            .write_layer(&tree, Source::Tree, 0, Codec::gzip(1))
            .expect("blob");
        let inputs = Inputs {
            tasks: name.into(),
            ..Inputs::default()
        };
        let entry = Entry {
            blob,
            tree: Default::default(),
            registered: serde_json::Value::Null,
            inputs: inputs.clone(),
            seconds: 0.0,
            built_at: 0,
            costs: Vec::new(),
            initramfs_pending: Vec::new(),
            compiles: Default::default(),
        };
        let stored = cache.put(&tree, &entry).expect("put");
        (cache, inputs, stored)
    }

    fn flip_a_byte(path: &Path) {
        let mut bytes = std::fs::read(path).expect("read");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(path, bytes).expect("write");
    }

    #[test]
    fn a_damaged_layer_is_dropped_when_a_build_would_use_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (cache, inputs, entry) = cache_with_layer(dir.path(), "a");
        assert!(matches!(cache.lookup(&inputs), Lookup::Hit(_)));

        flip_a_byte(&cache.blob_path(&entry.blob.digest).expect("digest"));
        match cache.lookup(&inputs) {
            Lookup::Dropped(why) => assert!(why.contains("now hashes to"), "{why}"),
            other => panic!("a flipped blob byte was used: {other:?}"),
        }
        assert!(!cache
            .blob_path(&entry.blob.digest)
            .expect("digest")
            .exists());
        assert!(matches!(cache.lookup(&inputs), Lookup::Miss));

        let (cache, inputs, entry) = cache_with_layer(dir.path(), "b");
        flip_a_byte(&entry.tree.join("etc/motd"));
        assert!(
            matches!(cache.lookup(&inputs), Lookup::Dropped(why) if why.contains("changed after it was stored"))
        );

        let (cache, inputs, _) = cache_with_layer(dir.path(), "c");
        let record = dir
            .path()
            .join("layers")
            .join(inputs.key())
            .join("entry.json");
        let text = std::fs::read(&record).expect("entry");
        std::fs::write(&record, &text[..text.len() / 2]).expect("truncate");
        assert!(
            matches!(cache.lookup(&inputs), Lookup::Dropped(why) if why.contains("entry.json is damaged"))
        );
    }

    #[test]
    fn cache_verify_hashes_everything_and_removes_what_is_damaged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (cache, _, good) = cache_with_layer(dir.path(), "good");
        let (_, bad_inputs, bad) = cache_with_layer(dir.path(), "bad");
        let download = dir.path().join("downloads/sha256");
        std::fs::create_dir_all(&download).expect("downloads");
        let named = download.join(
            integrity::file_digest(&cache.blob_path(&good.blob.digest).expect("digest"))
                .expect("digest")
                .trim_start_matches("sha256:"),
        );
        std::fs::write(&named, b"not what the name says").expect("download");
        // Flipped without changing the stamp's size: only a full hash finds it.
        flip_a_byte(&cache.blob_path(&bad.blob.digest).expect("digest"));

        let verified = cache
            .verify_all()
            .expect("verify")
            .expect("no build running");
        assert_eq!(verified.checked, 5, "{verified:?}");
        let entries: Vec<&str> = verified.removed.iter().map(|f| f.entry.as_str()).collect();
        assert_eq!(
            entries,
            vec![
                format!("blob {}", bad.blob.digest).as_str(),
                format!(
                    "download sha256:{}",
                    named.file_name().expect("name").to_string_lossy()
                )
                .as_str(),
                format!("layer {}", bad_inputs.key()).as_str(),
            ]
        );
        assert!(matches!(cache.lookup(&bad_inputs), Lookup::Miss));
        let again = cache.verify_all().expect("verify").expect("free");
        assert!(again.removed.is_empty(), "{again:?}");
    }

    /// A base folder `bases/<key>` with a tree, its stamp and the record `record`.
    fn base_with_record(dir: &Path, key: &str, record: &[u8]) {
        let base = dir.join("bases").join(key);
        std::fs::create_dir_all(base.join("tree/etc")).expect("tree");
        std::fs::write(base.join("tree/etc/os-release"), "ID=debian\n").expect("file");
        let stamp = integrity::tree_stamp(&base.join("tree")).expect("stamp");
        std::fs::write(base.join("tree.stamp"), stamp).expect("stamp");
        std::fs::write(base.join("layer-0.json"), record).expect("record");
    }

    #[test]
    fn cache_verify_reads_each_base_record_and_removes_one_naming_a_blob_it_does_not_hold() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (cache, _, layer) = cache_with_layer(dir.path(), "base");
        let record = |size: u64| {
            let base = crate::base::BaseLayer {
                blob: crate::blobs::LayerBlob {
                    size,
                    ..layer.blob.clone()
                },
                tree: Default::default(),
                created_by: "debootstrap bookworm".into(),
                made_now: false,
                from_registry: false,
            };
            serde_json::to_vec(&serde_json::json!({ "layers": [base] })).expect("json")
        };
        base_with_record(dir.path(), "whole", &record(layer.blob.size));
        base_with_record(dir.path(), "other-size", &record(layer.blob.size + 1));
        base_with_record(dir.path(), "damaged", br#"{"layers": [{"blob": 7}]}"#);

        let verified = cache.verify_all().expect("verify").expect("free");
        let mut found: Vec<(&str, &str)> = verified
            .removed
            .iter()
            .map(|f| (f.entry.as_str(), f.problem.as_str()))
            .collect();
        found.sort();
        let wrong = format!(
            "its blob {} has {} bytes, not {}",
            layer.blob.digest,
            layer.blob.size,
            layer.blob.size + 1
        );
        assert_eq!(
            found,
            vec![
                ("base damaged", "its record is damaged"),
                ("base other-size", wrong.as_str()),
            ]
        );
        assert!(dir.path().join("bases/whole/layer-0.json").is_file());
        assert!(!dir.path().join("bases/other-size/layer-0.json").exists());
    }
}
