//! Keeping the cache within a size: least recently used layers go first, as BuildKit's garbage
//! collector does. A layer is used when a build stores it or reuses it (its `entry.json` is
//! touched then), so a layer of any image built in the current run is never removed. A blob
//! goes with the last layer or base that names it. Bases (each shared by every image of a
//! distribution) are counted but not removed here; `prune` removes them with the rest.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{in_use_file, Entry, LayerCache};

/// What `collect` did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Collected {
    /// Layers removed, least recently used first.
    pub layers: usize,
    /// Blobs removed (those of the removed layers, and blobs nothing names).
    pub blobs: usize,
    /// Downloaded packages removed from the package cache, oldest first.
    pub packages: usize,
    /// Compile cache entries removed, least recently used first.
    pub compiles: usize,
    /// Bytes freed.
    pub freed: u64,
    /// Bytes the cache holds now.
    pub held: u64,
}

/// A cached layer as the collector sees it.
struct Layer {
    dir: PathBuf,
    entry: Entry,
    used: SystemTime,
}

/// The cache's filesystem's size in bytes, for the default limit.
pub fn filesystem_size(dir: &Path) -> std::io::Result<u64> {
    let stat = rustix::fs::statvfs(dir)?;
    Ok(stat.f_blocks.saturating_mul(stat.f_frsize))
}

/// The default limit: a tenth of the cache's filesystem (BuildKit's default keeps as much),
/// and never less than 4 GiB, which holds one compute image's layers.
pub fn default_limit(dir: &Path) -> u64 {
    const FLOOR: u64 = 4 << 30;
    filesystem_size(dir).map_or(FLOOR, |size| (size / 10).max(FLOOR))
}

impl LayerCache {
    /// Removes least recently used layers until the cache holds at most `limit` bytes, never a
    /// layer used since `since` (the layers of the builds that just ran), then the blobs no
    /// layer or base names that were last written before `since`. Returns `None`, removing
    /// nothing, while another build holds the cache: the last build to end collects.
    pub fn collect(&self, limit: u64, since: SystemTime) -> std::io::Result<Option<Collected>> {
        let lock = in_use_file(&self.dir)?;
        if rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
            return Ok(None);
        }
        self.collect_locked(limit, since).map(Some)
    }

    /// `collect`, for a caller that holds the cache exclusively.
    pub(super) fn collect_locked(
        &self,
        limit: u64,
        since: SystemTime,
    ) -> std::io::Result<Collected> {
        self.remove_unfinished()?;
        let layers = self.layers_by_use();
        let mut held = layers.iter().map(|l| l.entry.blob.diff_size).sum::<u64>()
            + dir_bytes(&self.dir.join("blobs/sha256"))
            + dir_bytes(&self.dir.join("registry/sha256"))
            + self.base_trees().iter().map(|(_, size)| size).sum::<u64>();
        let packages = package_files(&self.dir.join("packages"));
        held += packages.iter().map(|(_, _, size)| size).sum::<u64>();
        let compiles = compile_entries(&self.dir.join("compile"));
        held += compiles.iter().map(|(_, _, size)| size).sum::<u64>();
        let mut done = Collected::default();
        let mut removed = Vec::new();
        // Layers another imgbuild made go first: no build of this one can use them (the code
        // that made a layer is part of its key).
        let current = crate::layer_code::layer_code();
        let (mut dead, mut layers): (Vec<Layer>, Vec<Layer>) = layers
            .into_iter()
            .partition(|l| l.entry.inputs.imgbuild != current);
        held = remove_layers(&mut dead, held, limit, None, &mut done, &mut removed)?;
        // Then downloaded packages: a package saves a download, a layer a role's run (its
        // downloads included).
        for (path, modified, size) in packages {
            if held <= limit {
                break;
            }
            if modified < since {
                std::fs::remove_file(path)?;
                held = held.saturating_sub(size);
                done.freed += size;
                done.packages += 1;
            }
        }
        // Then compiled objects: an entry saves a compile, a layer the role's whole run.
        for (path, used, size) in compiles {
            if held <= limit {
                break;
            }
            if used < since {
                std::fs::remove_dir_all(path)?;
                held = held.saturating_sub(size);
                done.freed += size;
                done.compiles += 1;
            }
        }
        held = remove_layers(
            &mut layers,
            held,
            limit,
            Some(since),
            &mut done,
            &mut removed,
        )?;
        layers.extend(dead);
        let named: HashSet<String> = layers
            .iter()
            .map(|l| l.entry.blob.digest.clone())
            .chain(self.base_trees().into_iter().map(|(digest, _)| digest))
            .collect();
        for (path, digest, modified, size) in blob_files(&self.dir.join("blobs/sha256")) {
            let of_removed_layer = removed.contains(&digest);
            if !named.contains(&digest) && (of_removed_layer || modified < since) {
                std::fs::remove_file(path)?;
                held = held.saturating_sub(size);
                done.freed += size;
                done.blobs += 1;
            }
        }
        done.held = held;
        Ok(done)
    }

    /// Every layer, least recently used first.
    fn layers_by_use(&self) -> Vec<Layer> {
        let mut layers: Vec<Layer> = self
            .list()
            .into_iter()
            .filter_map(|(key, entry)| {
                let dir = self.dir.join("layers").join(key);
                let used = std::fs::metadata(dir.join("entry.json"))
                    .and_then(|m| m.modified())
                    .ok()?;
                Some(Layer { dir, entry, used })
            })
            .collect();
        layers.sort_by_key(|l| l.used);
        layers
    }

    /// The blob digest and tree size (its tar's size) of every cached base layer (one record per
    /// epoch the base was written with; the tree is counted once per record, an overestimate).
    fn base_trees(&self) -> Vec<(String, u64)> {
        let Ok(bases) = std::fs::read_dir(self.dir.join("bases")) else {
            return Vec::new();
        };
        bases
            .flatten()
            .filter_map(|base| std::fs::read_dir(base.path()).ok())
            .flat_map(|files| files.flatten())
            .filter(|file| {
                let name = file.file_name().to_string_lossy().into_owned();
                name.starts_with("layer-") && name.ends_with(".json")
            })
            .filter_map(|record| crate::base::BaseRecord::read(&record.path()))
            .flat_map(|cached| {
                cached
                    .layers
                    .into_iter()
                    .map(|layer| (layer.blob.digest, layer.blob.diff_size))
            })
            .collect()
    }
}

/// Removes layers from the front of `layers` (least recently used first) while `held` is over
/// `limit`, stopping at one used since `since` when given; returns what is held after.
fn remove_layers(
    layers: &mut Vec<Layer>,
    mut held: u64,
    limit: u64,
    since: Option<SystemTime>,
    done: &mut Collected,
    removed: &mut Vec<String>,
) -> std::io::Result<u64> {
    while held > limit {
        let Some(oldest) = layers.first() else { break };
        if since.is_some_and(|since| oldest.used >= since) {
            break;
        }
        let layer = layers.remove(0);
        std::fs::remove_dir_all(&layer.dir)?;
        held = held.saturating_sub(layer.entry.blob.diff_size);
        done.freed += layer.entry.blob.diff_size;
        done.layers += 1;
        removed.push(layer.entry.blob.digest);
    }
    Ok(held)
}

/// The finished blobs of a `sha256` folder: path, `sha256:` digest, modified, size.
fn blob_files(dir: &Path) -> Vec<(PathBuf, String, SystemTime, u64)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            let digest = format!("sha256:{}", e.file_name().to_string_lossy());
            Some((e.path(), digest, meta.modified().ok()?, meta.len()))
        })
        .collect()
}

/// The files of the package cache (`packages/<tool>/...`): path, modified, size; oldest first.
fn package_files(dir: &Path) -> Vec<(PathBuf, SystemTime, u64)> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_owned()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                folders.push(entry.path());
            } else if let Ok(modified) = meta.modified() {
                files.push((entry.path(), modified, meta.len()));
            }
        }
    }
    files.sort_by_key(|(_, modified, _)| *modified);
    files
}

/// The entries of the compile cache (`compile/<xx>/<key>/`): folder, last use (the shim touches
/// an entry it serves), size; least recently used first.
fn compile_entries(dir: &Path) -> Vec<(PathBuf, SystemTime, u64)> {
    let mut entries = Vec::new();
    for shard in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for entry in std::fs::read_dir(shard.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            // Entries are folders; a key's lock (`.<key>.lock`) is a file its compile removes.
            let Some(meta) = entry.metadata().ok().filter(|m| m.is_dir()) else {
                continue;
            };
            let Ok(used) = meta.modified() else {
                continue;
            };
            let size = std::fs::read_dir(entry.path())
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|f| f.metadata().ok())
                .map(|m| m.len())
                .sum();
            entries.push((entry.path(), used, size));
        }
    }
    entries.sort_by_key(|(_, used, _)| *used);
    entries
}

/// The bytes of the files directly in `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    blob_files(dir).iter().map(|(_, _, _, size)| size).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blobs::LayerBlob;
    use crate::cache::Inputs;
    use std::time::Duration;

    fn store(cache: &LayerCache, root: &Path, name: &str, bytes: u64) -> Inputs {
        let tree = root.join(name);
        std::fs::create_dir_all(&tree).expect("tree");
        // Ten bytes named by their digest, as a real blob is.
        let content = format!("{name:>10}");
        let digest = crate::hashing::digest_of(content.as_bytes());
        let file = root
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"));
        std::fs::write(file, content).expect("blob");
        let inputs = Inputs {
            imgbuild: crate::layer_code::layer_code(),
            tasks: name.into(),
            ..Inputs::default()
        };
        let entry = Entry {
            blob: LayerBlob {
                digest,
                size: 10,
                diff_id: String::new(),
                diff_size: bytes,
                compression: crate::compression::Compression::Gzip,
            },
            tree: PathBuf::new(),
            registered: serde_json::Value::Null,
            inputs: inputs.clone(),
            seconds: 0.0,
            built_at: 0,
            costs: Vec::new(),
            initramfs_pending: Vec::new(),
            compiles: Default::default(),
        };
        cache.put(&tree, &entry).expect("put");
        inputs
    }

    fn age(cache_dir: &Path, inputs: &Inputs, seconds_ago: u64) {
        let path = cache_dir
            .join("layers")
            .join(inputs.key())
            .join("entry.json");
        let file = std::fs::File::options()
            .append(true)
            .open(path)
            .expect("entry");
        file.set_modified(SystemTime::now() - Duration::from_secs(seconds_ago))
            .expect("set mtime");
    }

    #[test]
    fn least_recently_used_layers_go_first_and_this_run_s_layers_stay() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = LayerCache::new(dir.path()).expect("cache");
        std::fs::create_dir_all(dir.path().join("blobs/sha256")).expect("blobs");
        let old = store(&cache, dir.path(), "old", 1000);
        let older = store(&cache, dir.path(), "older", 1000);
        let reused = store(&cache, dir.path(), "reused", 1000);
        age(dir.path(), &old, 200);
        age(dir.path(), &older, 300);
        age(dir.path(), &reused, 400);
        let since = SystemTime::now() - Duration::from_secs(100);
        // Reusing a layer marks it used, however old it is.
        assert!(cache.get(&reused).is_some());
        let orphan = dir.path().join("blobs/sha256/orphan");
        std::fs::write(&orphan, [0u8; 5]).expect("orphan");
        let file = std::fs::File::options()
            .append(true)
            .open(&orphan)
            .expect("orphan");
        file.set_modified(since - Duration::from_secs(1))
            .expect("mtime");

        let done = cache.collect(2100, since).expect("collect").expect("free");
        assert_eq!(done.layers, 1, "{done:?}");
        let kept = |inputs: &Inputs| dir.path().join("layers").join(inputs.key()).is_dir();
        assert!(!kept(&older), "the least recently used went");
        assert!(kept(&old));
        let older_blob = crate::hashing::digest_of(format!("{:>10}", "older").as_bytes());
        assert!(!cache.blob_path(&older_blob).expect("digest").exists());
        assert!(!orphan.exists(), "a blob nothing names goes");
        assert_eq!(done.held, 2000 + 20);

        // Nothing used in this run is removed, even over the limit.
        let done = cache.collect(0, since).expect("collect").expect("free");
        assert_eq!(done.layers, 1);
        assert!(!kept(&old) && kept(&reused));
    }

    #[test]
    fn old_compile_entries_go_before_any_layer_and_this_run_s_stay() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = LayerCache::new(dir.path()).expect("cache");
        std::fs::create_dir_all(dir.path().join("blobs/sha256")).expect("blobs");
        let layer = store(&cache, dir.path(), "layer", 1000);
        age(dir.path(), &layer, 300);
        let since = SystemTime::now() - Duration::from_secs(100);
        let entry = |key: &str, age: u64| {
            let path = dir.path().join("compile").join(&key[..2]).join(key);
            std::fs::create_dir_all(&path).expect("entry");
            std::fs::write(path.join("obj"), [0u8; 300]).expect("obj");
            std::fs::write(path.join("sums"), [0u8; 100]).expect("sums");
            let folder = std::fs::File::open(&path).expect("open");
            folder
                .set_modified(SystemTime::now() - Duration::from_secs(age))
                .expect("mtime");
            path
        };
        let oldest = entry("aa01", 500);
        let old = entry("bb02", 400);
        let fresh = entry("cc03", 10);
        // A lock a killed compile left beside its key's entry is no entry.
        let lock = dir.path().join("compile/aa/.aa01.lock");
        std::fs::write(&lock, b"").expect("lock");
        std::fs::File::open(&lock)
            .and_then(|f| f.set_modified(SystemTime::now() - Duration::from_secs(600)))
            .expect("lock mtime");

        // 1000 + 10 (the layer and its blob) + 1200 of entries, down to 1500.
        let done = cache.collect(1500, since).expect("collect").expect("free");
        assert_eq!((done.compiles, done.layers), (2, 0), "{done:?}");
        assert!(!oldest.exists() && !old.exists() && fresh.exists());
        let done = cache.collect(0, since).expect("collect").expect("free");
        assert_eq!((done.compiles, done.layers), (0, 1), "{done:?}");
        assert!(fresh.exists(), "an entry used in this run stays");
    }

    #[test]
    fn old_downloaded_packages_go_before_any_layer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = LayerCache::new(dir.path()).expect("cache");
        std::fs::create_dir_all(dir.path().join("blobs/sha256")).expect("blobs");
        let layer = store(&cache, dir.path(), "layer", 1000);
        age(dir.path(), &layer, 300);
        let since = SystemTime::now() - Duration::from_secs(100);
        let pool = dir.path().join("packages/apt");
        std::fs::create_dir_all(&pool).expect("pool");
        let package = |name: &str, age: u64| {
            let path = pool.join(name);
            std::fs::write(&path, [0u8; 400]).expect("package");
            let file = std::fs::File::options()
                .append(true)
                .open(&path)
                .expect("open");
            file.set_modified(SystemTime::now() - Duration::from_secs(age))
                .expect("mtime");
            path
        };
        let oldest = package("a_1_amd64.deb", 500);
        let old = package("b_1_amd64.deb", 400);
        let fresh = package("c_1_amd64.deb", 10);

        // 1000 + 10 (the layer and its blob) + 1200 of packages, down to 1500.
        let done = cache.collect(1500, since).expect("collect").expect("free");
        assert_eq!((done.packages, done.layers), (2, 0), "{done:?}");
        assert!(!oldest.exists() && !old.exists() && fresh.exists());
        // Under any limit, this run's download stays.
        let done = cache.collect(0, since).expect("collect").expect("free");
        assert_eq!((done.packages, done.layers), (0, 1), "{done:?}");
        assert!(fresh.exists());
    }

    #[test]
    fn layers_another_imgbuild_made_go_before_packages() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = LayerCache::new(dir.path()).expect("cache");
        std::fs::create_dir_all(dir.path().join("blobs/sha256")).expect("blobs");
        let live = store(&cache, dir.path(), "live", 1000);
        age(dir.path(), &live, 600);
        // A layer an older imgbuild made (its entry says so), used more recently than the
        // live one.
        let dead = store(&cache, dir.path(), "dead", 1000);
        let stored = dir.path().join("layers").join(dead.key());
        let entry_path = stored.join("entry.json");
        let mut entry: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&entry_path).expect("entry")).expect("json");
        entry["inputs"]["imgbuild"] = serde_json::json!("0.1.0 older-code");
        std::fs::write(&entry_path, entry.to_string()).expect("entry");
        let pool = dir.path().join("packages/apt");
        std::fs::create_dir_all(&pool).expect("pool");
        let package = pool.join("a_1_amd64.deb");
        std::fs::write(&package, [0u8; 400]).expect("package");
        let file = std::fs::File::options()
            .append(true)
            .open(&package)
            .expect("open");
        file.set_modified(SystemTime::now() - Duration::from_secs(900))
            .expect("mtime");
        let since = SystemTime::now() - Duration::from_secs(100);

        // 2000 + 20 of layers and blobs, 400 of packages, down to 1500: the dead layer alone.
        let done = cache.collect(1500, since).expect("collect").expect("free");
        assert_eq!((done.layers, done.packages), (1, 0), "{done:?}");
        assert!(!stored.exists() && package.exists());
        assert!(dir.path().join("layers").join(live.key()).is_dir());
    }

    #[test]
    fn a_running_build_defers_collection() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = LayerCache::new(dir.path()).expect("cache");
        let _held = cache.hold().expect("hold");
        assert_eq!(cache.collect(0, SystemTime::now()).expect("collect"), None);
    }
}
