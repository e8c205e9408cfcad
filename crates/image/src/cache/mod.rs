//! The layer cache: a role's layer is reused when nothing it depends on changed. The key hashes
//! the diff_ids of the layers below, the role's resolved tasks and handlers, the bytes of every
//! project file it reads, the sha256 of every artifact it downloads, and what earlier roles
//! registered. A miss says which of those changed since the last build of the same image and
//! role.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::blobs::LayerBlob;
use crate::hashing::digest_of;

pub mod compile_share;
mod gc;
pub mod integrity;
pub mod remote;
pub mod remote_builds;
pub mod remote_prune;
mod verify;
pub use gc::{default_limit, Collected};
pub use verify::{Finding, Verified};

/// The inputs of a role's layer, each hashed on its own so a miss can say what changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inputs {
    /// imgbuild's version (the layer format).
    pub imgbuild: String,
    /// Digest of the stack of layers below (every layer's diff_id, in order).
    pub parent: String,
    /// Digest of the role's resolved tasks and the handlers.
    pub tasks: String,
    /// Project file → digest of its bytes.
    pub files: BTreeMap<String, String>,
    /// URL path → pinned sha256 (or `unpinned`).
    pub artifacts: BTreeMap<String, String>,
    /// Digest of what earlier roles registered.
    pub registered: String,
    /// The fingerprint of the module-signing certificate the role was given (never the key):
    /// a new key rebuilds the role. Absent, the key is what it was before this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
}

impl Inputs {
    /// The cache key.
    pub fn key(&self) -> String {
        digest_of(&serde_json::to_vec(self).unwrap_or_default())
            .trim_start_matches("sha256:")
            .to_owned()
    }

    /// What differs from `older`, for people.
    pub fn changes_since(&self, older: &Inputs) -> Vec<String> {
        let mut out = Vec::new();
        if self.imgbuild != older.imgbuild {
            out.push(format!(
                "imgbuild changed ({} -> {})",
                older.imgbuild, self.imgbuild
            ));
        }
        if self.parent != older.parent {
            out.push("a layer below changed".into());
        }
        if self.tasks != older.tasks {
            out.push("the role's resolved tasks changed (variables, task files or recipe)".into());
        }
        for (file, digest) in &self.files {
            match older.files.get(file) {
                None => out.push(format!("{file} is new")),
                Some(old) if old != digest => out.push(format!("{file} changed")),
                _ => {}
            }
        }
        for file in older.files.keys().filter(|f| !self.files.contains_key(*f)) {
            out.push(format!("{file} is no longer used"));
        }
        for (url, sha) in &self.artifacts {
            if older.artifacts.get(url) != Some(sha) {
                out.push(format!("artifact {url} changed"));
            }
        }
        if self.registered != older.registered {
            out.push("results registered by earlier roles changed".into());
        }
        if self.signer != older.signer {
            out.push("the module signing certificate changed".into());
        }
        out
    }
}

/// A cached layer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The layer's blob.
    pub blob: LayerBlob,
    /// The layer folder (overlay form), used as a lower by the roles above it.
    #[serde(skip)]
    pub tree: PathBuf,
    /// What the role registered and set (restored on a hit, so later roles see it).
    pub registered: Json,
    /// The inputs that made it.
    pub inputs: Inputs,
    /// Seconds the role took when it ran.
    pub seconds: f64,
    /// When it ran (seconds since 1970; 0 for entries older than this field).
    #[serde(default)]
    pub built_at: u64,
    /// What each of its tasks cost when it ran (none for entries older than this field, or
    /// taken from a registry).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub costs: Vec<engine::costs::TaskCost>,
    /// The initramfs builds its packages' hooks asked for that were deferred and not yet done
    /// when it ended (restored on a hit, so the last role builds them once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub initramfs_pending: Vec<String>,
    /// What its compiles found in the compile cache when it ran.
    #[serde(
        default,
        skip_serializing_if = "engine::compile_cache::CompileStats::is_empty"
    )]
    pub compiles: engine::compile_cache::CompileStats,
}

/// The cache folder: `layers/<key>/{tree, entry.json}` and `last/<image>/<role>.json`.
#[derive(Debug, Clone)]
pub struct LayerCache {
    dir: PathBuf,
}

fn safe_name(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl LayerCache {
    /// The cache at `dir`.
    pub fn new(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir.join("layers"))?;
        std::fs::create_dir_all(dir.join("last"))?;
        std::fs::create_dir_all(dir.join("work"))?;
        Ok(Self {
            dir: dir.to_owned(),
        })
    }

    /// A folder for a role's overlay (upper, work, merged) on the cache's filesystem.
    pub fn work_dir(&self) -> std::io::Result<tempfile::TempDir> {
        tempfile::Builder::new()
            .prefix("role-")
            .tempdir_in(self.dir.join("work"))
    }

    /// The entry for `inputs`, if whole (`lookup` without the reason a damaged one went).
    pub fn get(&self, inputs: &Inputs) -> Option<Entry> {
        match self.lookup(inputs) {
            Lookup::Hit(entry) => Some(*entry),
            Lookup::Miss | Lookup::Dropped(_) => None,
        }
    }

    /// The entry for `inputs`, checked before use: its record parses, its folder is there and
    /// unchanged since it was stored, its blob has its digest (see `integrity`). A damaged
    /// entry is removed (with its blob, when the blob is what is wrong) and reported as
    /// `Dropped`, so the role runs again.
    pub fn lookup(&self, inputs: &Inputs) -> Lookup {
        let dir = self.dir.join("layers").join(inputs.key());
        if !dir.is_dir() {
            return Lookup::Miss;
        }
        if unfinished(&dir) {
            // The build that placed it stopped before its blob was stored: nothing is damaged,
            // the layer was never finished. (A build still writing it holds the key's lock.)
            let _ = std::fs::remove_dir_all(&dir);
            return Lookup::Miss;
        }
        match self.check(&dir, false) {
            Ok(entry) => {
                crate::used::touch(&dir.join("entry.json"));
                Lookup::Hit(Box::new(entry))
            }
            Err(damage) => Lookup::Dropped(damage.remove(&dir)),
        }
    }

    /// Checks the layer folder `dir`: by stamps, or (`full`) hashing its blob whatever its
    /// stamp says. Records a new stamp when the blob's changed but its content is right.
    pub(crate) fn check(&self, dir: &Path, full: bool) -> Result<Entry, Damage> {
        let damaged = |what: String| Damage {
            what,
            bad_blob: None,
        };
        if unfinished(dir) {
            return Err(damaged(
                "it is unfinished: the build that made it stopped before its blob was stored"
                    .into(),
            ));
        }
        let text = std::fs::read_to_string(dir.join("entry.json"))
            .map_err(|e| damaged(format!("its record entry.json cannot be read: {e}")))?;
        let mut entry: Entry = serde_json::from_str(&text)
            .map_err(|e| damaged(format!("its record entry.json is damaged: {e}")))?;
        entry.tree = dir.join("tree");
        if !entry.tree.is_dir() {
            return Err(damaged("its folder is missing".into()));
        }
        let stamp_path = dir.join("stamp.json");
        let recorded: Option<Stamp> = std::fs::read(&stamp_path)
            .ok()
            .and_then(|text| serde_json::from_slice(&text).ok());
        let blob = self
            .blob_path(&entry.blob.digest)
            .map_err(|e| damaged(format!("its record names no blob: {e}")))?;
        let recorded_blob = recorded.as_ref().filter(|_| !full).map(|s| &s.blob);
        let blob_stamp =
            integrity::check_blob(&blob, &entry.blob.digest, entry.blob.size, recorded_blob)
                .map_err(|what| Damage {
                    bad_blob: blob.is_file().then(|| blob.clone()),
                    what,
                })?;
        let tree = integrity::tree_stamp(&entry.tree)
            .map_err(|e| damaged(format!("its folder cannot be read: {e}")))?;
        if let Some(recorded) = &recorded {
            if integrity::tree_changed(&recorded.tree, &tree) {
                return Err(damaged(
                    "a file in its folder changed after it was stored".into(),
                ));
            }
        }
        let same = |r: &Stamp| r.blob == blob_stamp && r.tree == tree;
        if !recorded.as_ref().is_some_and(same) {
            // Not recording it (a full disk) only means the next check hashes again.
            let _ = write_json(
                &stamp_path,
                &Stamp {
                    blob: blob_stamp,
                    tree,
                },
            );
        }
        Ok(entry)
    }

    /// The file of a layer's blob in the cache's store, its digest checked first (`sha256`
    /// only), so a record's digest names a file in the store and nothing else.
    pub(crate) fn blob_path(&self, digest: &str) -> Result<PathBuf, oci_layout::DigestError> {
        Ok(oci_layout::Digest::parse(digest)?
            .sha256()?
            .blob_path(&self.dir.join("blobs")))
    }

    /// Stores a role's layer: moves `tree` into the cache and writes the entry last, so an
    /// interrupted store leaves no entry.
    pub fn put(&self, tree: &Path, entry: &Entry) -> std::io::Result<Entry> {
        self.place_tree(tree, &entry.inputs.key())?;
        self.record(entry)
    }

    /// Moves a role's layer folder `tree` to its place in the cache, under `key`, marked
    /// unfinished until [`LayerCache::record`] writes its entry; returns the folder's new path,
    /// which later roles can use as a lower while the layer's blob is written. A lookup that
    /// finds an unfinished folder (its build stopped before recording it) removes it.
    pub fn place_tree(&self, tree: &Path, key: &str) -> std::io::Result<PathBuf> {
        let final_dir = self.dir.join("layers").join(key);
        let staging = self
            .dir
            .join("layers")
            .join(format!(".{key}.tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging)?;
        std::fs::rename(tree, staging.join("tree"))?;
        std::fs::write(staging.join(UNFINISHED), b"")?;
        if final_dir.exists() {
            let _ = std::fs::remove_dir_all(&final_dir);
        }
        std::fs::rename(&staging, &final_dir)?;
        Ok(final_dir.join("tree"))
    }

    /// Records `entry` for the folder [`LayerCache::place_tree`] placed under its key: the
    /// entry is written last, through a rename, so a reader sees a whole entry or none.
    pub fn record(&self, entry: &Entry) -> std::io::Result<Entry> {
        let final_dir = self.dir.join("layers").join(entry.inputs.key());
        let mut stored = entry.clone();
        stored.tree = final_dir.join("tree");
        // The stamps reuse is checked against (a blob not in this cache's store has none yet).
        let blob_path = self.blob_path(&entry.blob.digest).ok();
        if let Some(blob) = blob_path.and_then(|path| integrity::FileStamp::of(&path).ok()) {
            let tree = integrity::tree_stamp(&stored.tree)?;
            write_json(&final_dir.join("stamp.json"), &Stamp { blob, tree })?;
        }
        write_json(&final_dir.join("entry.json"), entry)?;
        std::fs::remove_file(final_dir.join(UNFINISHED))?;
        Ok(stored)
    }

    /// Removes the layer folders builds placed but never recorded (they stopped first); only
    /// for a caller that holds the cache exclusively, so no running build's folder goes.
    pub(crate) fn remove_unfinished(&self) -> std::io::Result<()> {
        for entry in std::fs::read_dir(self.dir.join("layers"))?.flatten() {
            if unfinished(&entry.path()) {
                std::fs::remove_dir_all(entry.path())?;
            }
        }
        Ok(())
    }

    /// What the last build of `image`'s `role` used.
    pub fn last(&self, image: &str, role: &str) -> Option<Inputs> {
        let text = std::fs::read_to_string(
            self.dir
                .join("last")
                .join(safe_name(image))
                .join(format!("{}.json", safe_name(role))),
        )
        .ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Records what this build of `image`'s `role` used.
    pub fn set_last(&self, image: &str, role: &str, inputs: &Inputs) -> std::io::Result<()> {
        let dir = self.dir.join("last").join(safe_name(image));
        std::fs::create_dir_all(&dir)?;
        write_json(&dir.join(format!("{}.json", safe_name(role))), inputs)
    }

    /// Every entry: key, entry.
    pub fn list(&self) -> Vec<(String, Entry)> {
        let mut out: Vec<(String, Entry)> = std::fs::read_dir(self.dir.join("layers"))
            .map(|d| d.filter_map(|e| e.ok()).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|e| {
                let key = e.file_name().to_string_lossy().into_owned();
                let text = std::fs::read_to_string(e.path().join("entry.json")).ok()?;
                let mut entry: Entry = serde_json::from_str(&text).ok()?;
                entry.tree = e.path().join("tree");
                Some((key, entry))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Marks the cache as in use by a build until the file is dropped (a shared lock: builds run
    /// side by side; `prune` waits for none of them and refuses while any runs).
    pub fn hold(&self) -> std::io::Result<std::fs::File> {
        let file = in_use_file(&self.dir)?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockShared)?;
        Ok(file)
    }

    /// Removes layers no image's last build uses, the blobs no remaining layer or base names,
    /// and what interrupted builds left behind (work folders, temporary blobs, partial
    /// downloads, unfinished bases and compile cache entries). Refuses with
    /// `WouldBlock` while a build holds the cache: its work folders and lowers are in use.
    pub fn prune(&self) -> std::io::Result<Pruned> {
        let lock = in_use_file(&self.dir)?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::WouldBlock))?;
        let mut used = std::collections::HashSet::new();
        for image in std::fs::read_dir(self.dir.join("last"))?.filter_map(|e| e.ok()) {
            for role in std::fs::read_dir(image.path())?.filter_map(|e| e.ok()) {
                if let Ok(text) = std::fs::read_to_string(role.path()) {
                    if let Ok(inputs) = serde_json::from_str::<Inputs>(&text) {
                        used.insert(inputs.key());
                    }
                }
            }
        }
        let mut pruned = Pruned::default();
        for entry in std::fs::read_dir(self.dir.join("layers"))?.filter_map(|e| e.ok()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                std::fs::remove_dir_all(entry.path())?;
                pruned.leftovers += 1;
            } else if !used.contains(&name) {
                std::fs::remove_dir_all(entry.path())?;
                pruned.layers += 1;
            }
        }
        let everything = |_: &str| true;
        let temporary = |name: &str| name.starts_with(".tmp");
        let unfinished_base = |name: &str| name.contains(".tmp");
        for (dir, leftover) in [
            ("work", &everything as &dyn Fn(&str) -> bool),
            ("locks", &everything),
            ("blobs/sha256", &temporary),
            ("registry/sha256", &temporary),
            ("downloads/partial", &everything),
            ("verify", &temporary),
        ] {
            pruned.leftovers += remove_matching(&self.dir.join(dir), leftover)?;
        }
        // Under the exclusive lock no build runs, so every blob nothing names is unused.
        pruned.blobs = self
            .collect_locked(u64::MAX, std::time::SystemTime::now())?
            .blobs;
        if let Ok(bases) = std::fs::read_dir(self.dir.join("bases")) {
            for base in bases.flatten().filter(|b| b.path().is_dir()) {
                pruned.leftovers += remove_matching(&base.path(), &unfinished_base)?;
            }
        }
        // A compile cache entry being written when its build was killed (never looked up: an
        // entry is found by its key's name).
        let staged = |name: &str| name.starts_with(".new.");
        if let Ok(shards) = std::fs::read_dir(self.dir.join("compile")) {
            for shard in shards.flatten().filter(|s| s.path().is_dir()) {
                pruned.leftovers += remove_matching(&shard.path(), &staged)?;
            }
        }
        Ok(pruned)
    }
}

/// What a lookup found.
#[derive(Debug)]
pub enum Lookup {
    /// A whole entry.
    Hit(Box<Entry>),
    /// No entry.
    Miss,
    /// An entry that was damaged (why), now removed.
    Dropped(String),
}

/// The file that marks a layer folder placed in the cache whose entry is not yet recorded.
const UNFINISHED: &str = "unfinished";

/// Whether the layer folder `dir` was placed but never recorded.
fn unfinished(dir: &Path) -> bool {
    dir.join(UNFINISHED).exists() && !dir.join("entry.json").exists()
}

/// What is wrong with an entry, and its blob when the blob is what is wrong.
pub(crate) struct Damage {
    what: String,
    bad_blob: Option<PathBuf>,
}

impl Damage {
    /// Removes the damaged layer folder `dir` (and the blob, when it is what is wrong);
    /// returns what was wrong.
    pub(crate) fn remove(self, dir: &Path) -> String {
        let _ = std::fs::remove_dir_all(dir);
        if let Some(blob) = self.bad_blob {
            let _ = std::fs::remove_file(blob);
        }
        self.what
    }
}

/// A layer's stamps (see `integrity`), in `stamp.json` beside its entry.
#[derive(Debug, Serialize, Deserialize)]
struct Stamp {
    blob: integrity::FileStamp,
    tree: String,
}

/// Writes `value` as JSON to `path` through a temporary file and a rename, so a reader never
/// sees half a record.
fn write_json(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    crate::atomic::write_file(path, &json)
}

/// What `prune` removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    /// Layers no image's last build uses.
    pub layers: usize,
    /// Leftovers of interrupted builds.
    pub leftovers: usize,
    /// Blobs no remaining layer or base names.
    pub blobs: usize,
}

fn in_use_file(dir: &Path) -> std::io::Result<std::fs::File> {
    std::fs::create_dir_all(dir)?;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(".in-use"))
}

/// Removes the entries of `dir` whose names `leftover` accepts; a missing folder is empty.
fn remove_matching(dir: &Path, leftover: &dyn Fn(&str) -> bool) -> std::io::Result<usize> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(0);
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if leftover(&entry.file_name().to_string_lossy()) {
            let path = entry.path();
            if path.is_dir() && !path.is_symlink() {
                std::fs::remove_dir_all(&path)?;
            } else {
                std::fs::remove_file(&path)?;
            }
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn miss_reasons() {
        let mut a = Inputs {
            imgbuild: "1".into(),
            parent: "p".into(),
            tasks: "t".into(),
            ..Inputs::default()
        };
        a.files.insert("roles/x/templates/a.j2".into(), "1".into());
        let mut b = a.clone();
        b.files.insert("roles/x/templates/a.j2".into(), "2".into());
        b.artifacts.insert("/nvidia/x.run".into(), "abc".into());
        assert_ne!(a.key(), b.key());
        let why = b.changes_since(&a);
        assert_eq!(
            why,
            vec![
                "roles/x/templates/a.j2 changed".to_string(),
                "artifact /nvidia/x.run changed".to_string()
            ]
        );
    }

    #[test]
    fn the_signer_fingerprint_keys_a_layer_and_its_absence_keeps_the_old_keys() {
        let unsigned = Inputs {
            tasks: "t".into(),
            ..Inputs::default()
        };
        // Without a signer the key is the one this field's absence gave: caches stay warm.
        let json = serde_json::to_string(&unsigned).expect("json");
        assert!(!json.contains("signer"), "{json}");
        let signed = |fp: &str| Inputs {
            signer: Some(fp.into()),
            ..unsigned.clone()
        };
        assert_ne!(signed("sha256:aa").key(), unsigned.key());
        assert_ne!(signed("sha256:aa").key(), signed("sha256:bb").key());
        assert_eq!(signed("sha256:aa").key(), signed("sha256:aa").key());
        assert_eq!(
            signed("sha256:bb").changes_since(&signed("sha256:aa")),
            ["the module signing certificate changed"]
        );
    }

    #[test]
    fn put_get_prune() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = LayerCache::new(dir.path()).expect("cache");
        let tree = dir.path().join("t");
        std::fs::create_dir_all(tree.join("etc")).expect("mkdir");
        let inputs = Inputs {
            tasks: "x".into(),
            ..Inputs::default()
        };
        let blobs = crate::blobs::BlobStore::new(&dir.path().join("blobs")).expect("blobs");
        let blob = LayerBlob {
            digest: blobs.write_bytes(b"x").expect("blob"),
            size: 1,
            diff_id: "sha256:1".into(),
            diff_size: 2,
            compression: crate::compression::Compression::Gzip,
        };
        let entry = Entry {
            blob,
            tree: PathBuf::new(),
            registered: Json::Null,
            inputs: inputs.clone(),
            seconds: 1.0,
            built_at: 0,
            costs: Vec::new(),
            initramfs_pending: Vec::new(),
            compiles: Default::default(),
        };
        cache.put(&tree, &entry).expect("put");
        assert!(cache
            .get(&inputs)
            .is_some_and(|e| e.tree.join("etc").is_dir()));
        assert_eq!(
            cache.prune().expect("prune").layers,
            1,
            "unused by any last build"
        );
        assert!(cache.get(&inputs).is_none());
    }

    #[test]
    fn a_placed_folder_is_a_miss_until_recorded_and_gone_when_never_recorded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = LayerCache::new(dir.path()).expect("cache");
        let blobs = crate::blobs::BlobStore::new(&dir.path().join("blobs")).expect("blobs");
        let entry = |tasks: &str| Entry {
            blob: LayerBlob {
                digest: blobs.write_bytes(tasks.as_bytes()).expect("blob"),
                size: tasks.len() as u64,
                diff_id: "sha256:1".into(),
                diff_size: 2,
                compression: crate::compression::Compression::Gzip,
            },
            tree: PathBuf::new(),
            registered: Json::Null,
            inputs: Inputs {
                tasks: tasks.into(),
                ..Inputs::default()
            },
            seconds: 1.0,
            built_at: 0,
            costs: Vec::new(),
            initramfs_pending: Vec::new(),
            compiles: Default::default(),
        };
        let placed = |name: &str, entry: &Entry| {
            let tree = dir.path().join(name);
            std::fs::create_dir_all(tree.join("etc")).expect("mkdir");
            cache.place_tree(&tree, &entry.inputs.key()).expect("place")
        };
        // Recorded after it was placed (its blob written meanwhile): a hit on that folder.
        let finished = entry("finished");
        let tree = placed("a", &finished);
        assert!(tree.join("etc").is_dir());
        assert!(matches!(cache.lookup(&finished.inputs), Lookup::Miss));
        let tree = placed("a", &finished);
        cache.record(&finished).expect("record");
        match cache.lookup(&finished.inputs) {
            Lookup::Hit(hit) => assert_eq!(hit.tree, tree),
            _ => panic!("the recorded layer was not found"),
        }
        // Never recorded (its build was killed): a miss, not damage, and the folder goes.
        let killed = entry("killed");
        let tree = placed("b", &killed);
        assert!(matches!(cache.lookup(&killed.inputs), Lookup::Miss));
        assert!(!tree.exists());
        // The collector removes such a folder too; a recorded layer is not touched.
        let tree = placed("c", &killed);
        cache.remove_unfinished().expect("sweep");
        assert!(!tree.exists());
        assert!(cache.get(&finished.inputs).is_some());
    }

    #[test]
    fn a_record_naming_no_sha256_digest_is_dropped_and_nothing_outside_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = LayerCache::new(dir.path()).expect("cache");
        let tree = dir.path().join("t");
        std::fs::create_dir_all(&tree).expect("mkdir");
        // What `blobs/sha256/../../victim` would name, were the digest not checked.
        std::fs::write(dir.path().join("victim"), "x").expect("victim");
        let inputs = Inputs::default();
        let entry = Entry {
            blob: LayerBlob {
                digest: "sha256:../../victim".into(),
                size: 1,
                diff_id: "sha256:1".into(),
                diff_size: 2,
                compression: crate::compression::Compression::Gzip,
            },
            tree: PathBuf::new(),
            registered: Json::Null,
            inputs: inputs.clone(),
            seconds: 1.0,
            built_at: 0,
            costs: Vec::new(),
            initramfs_pending: Vec::new(),
            compiles: Default::default(),
        };
        cache.put(&tree, &entry).expect("put");
        match cache.lookup(&inputs) {
            Lookup::Dropped(why) => assert!(why.contains("names no blob"), "{why}"),
            _ => panic!("the entry was taken"),
        }
        assert!(dir.path().join("victim").is_file());
    }

    #[test]
    fn prune_removes_leftovers_and_waits_for_running_builds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = LayerCache::new(dir.path()).expect("cache");
        let leftovers = [
            "blobs/sha256/.tmpAbC",
            "registry/sha256/.tmpXyZ",
            "downloads/partial/0123abcd",
            "bases/feed/tree.tmp-42/etc/x",
            "compile/ab/.new.Q1w2E3/obj",
        ];
        let kept_entry = dir.path().join("compile/ab/ab12/sums");
        std::fs::create_dir_all(kept_entry.parent().expect("parent")).expect("mkdir");
        std::fs::write(&kept_entry, "x").expect("write");
        for file in leftovers {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, "x").expect("write");
        }
        std::fs::write(dir.path().join("blobs/sha256/abcd"), "unnamed").expect("write");
        let work = cache.work_dir().expect("work").keep();

        let held = cache.hold().expect("hold");
        let busy = cache.prune().expect_err("a build holds the cache");
        assert_eq!(busy.kind(), std::io::ErrorKind::WouldBlock);
        assert!(work.is_dir(), "nothing removed while a build runs");
        drop(held);

        let pruned = cache.prune().expect("prune");
        assert_eq!(pruned.leftovers, 6, "{pruned:?}");
        assert!(!work.exists());
        assert!(kept_entry.exists(), "a whole compile cache entry stays");
        for file in leftovers {
            assert!(!dir.path().join(file).exists(), "{file}");
        }
        assert_eq!(pruned.blobs, 1, "no layer or base names it");
        assert!(!dir.path().join("blobs/sha256/abcd").exists());
    }
}
