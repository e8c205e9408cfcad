//! Bases: the bottom layers of an image. `docker` (pulled from a registry), `debootstrap`
//! (suite, archive and packages; the archive from the build host's apt sources unless the
//! recipe names one), `dnf` (the building machine's dnf from the recipe's repositories, see
//! `dnf_base`), `oci` (an OCI layout folder) and `archive` (a docker-archive). Each is cached:
//! debootstrap and dnf by their inputs, the others by their layer digests.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use spec::BaseKind;

use crate::blobs::{BlobStore, LayerBlob};
use crate::cache::integrity::{self, FileStamp};
use crate::cache::remote::{self, Record, RegistryCache};
use crate::compression::{Codec, Compression};
use crate::dnf_base;
use crate::hashing::digest_of;
use crate::layer::Source;

/// A base layer: its blob and its folder (in overlay form: whiteouts as char devices 0/0).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BaseLayer {
    /// The blob.
    pub blob: LayerBlob,
    /// The folder, used as an overlay lower (derived from the cache entry's place, not stored).
    #[serde(skip)]
    pub tree: PathBuf,
    /// What made it.
    pub created_by: String,
    /// Made by this build (not found in the cache).
    #[serde(skip)]
    pub made_now: bool,
    /// Taken from the registry cache (`--cache-from`) by this build.
    #[serde(skip)]
    pub from_registry: bool,
}

/// Why the base could not be had.
#[derive(Debug, thiserror::Error)]
pub enum BaseError {
    /// The recipe asks for something imgbuild cannot do (yet).
    #[error("{0}")]
    Unsupported(String),
    /// debootstrap or reading the base failed.
    #[error("{0}")]
    Failed(String),
    /// I/O.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BaseError {
    let what = what.into();
    move |source| BaseError::Io { what, source }
}

/// What the recipe says about its base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseRequest {
    /// Where the base comes from (`bootstrap`).
    pub bootstrap: BaseKind,
    /// The reference, path or suite.
    pub build_from: String,
    /// `debootstrap_mirror`, when the recipe names one.
    pub debootstrap_mirror: Option<String>,
    /// `bootstrap_include`.
    pub include: Vec<String>,
    /// `dnf_repos`, for `bootstrap: dnf`.
    pub dnf_repos: Option<Json>,
}

impl BaseRequest {
    /// Reads the base settings from a plan's recipe variables (the planner refused a
    /// `bootstrap` that names no base; a plan written otherwise is refused here).
    pub fn from_vars(vars: &indexmap::IndexMap<String, Json>) -> Result<Self, BaseError> {
        let text = |k: &str| vars.get(k).and_then(Json::as_str).map(str::to_owned);
        let include = match vars.get("bootstrap_include") {
            Some(Json::Array(items)) => items
                .iter()
                .filter_map(Json::as_str)
                .map(str::to_owned)
                .collect(),
            Some(Json::String(s)) => s
                .split(',')
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty())
                .collect(),
            _ => Vec::new(),
        };
        let bootstrap = match text("bootstrap") {
            Some(word) => {
                BaseKind::parse(&word).map_err(|e| BaseError::Unsupported(e.to_string()))?
            }
            None => BaseKind::default(),
        };
        Ok(Self {
            bootstrap,
            build_from: text("build_from").unwrap_or_default(),
            debootstrap_mirror: text("debootstrap_mirror"),
            include,
            dnf_repos: vars.get("dnf_repos").cloned(),
        })
    }
}

/// The record of a cached base (`bases/<key>/layer-<epoch>.json`): its layers, as written and
/// as the cache's collector and checker read them.
#[derive(Serialize, Deserialize)]
pub(crate) struct BaseRecord {
    /// The base's layers, bottom first.
    pub(crate) layers: Vec<BaseLayer>,
    /// The blob's stamp when it was last checked (see `cache::integrity`).
    #[serde(default)]
    blob_stamp: Option<FileStamp>,
}

impl BaseRecord {
    /// The record in the file `path`, when it reads as one.
    pub(crate) fn read(path: &Path) -> Option<Self> {
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }
}

/// The base's tree, if it is the one that was made: a tree whose stamp (`tree.stamp`, see
/// `cache::integrity`) changed is removed with every layer written from it. A tree cached
/// before stamps were kept (or in an older stamp format) gets its stamp now.
fn checked_tree(dir: &Path) -> Option<PathBuf> {
    let tree = dir.join("tree");
    if !tree.is_dir() {
        return None;
    }
    let stamp_file = dir.join("tree.stamp");
    let now = integrity::tree_stamp(&tree).ok()?;
    match std::fs::read_to_string(&stamp_file) {
        Ok(recorded) if integrity::tree_changed(&recorded, &now) => {
            let _ = std::fs::remove_dir_all(dir);
            None
        }
        Ok(recorded) if recorded.trim() == now => Some(tree),
        _ => {
            let _ = std::fs::write(&stamp_file, &now);
            Some(tree)
        }
    }
}

/// Holds an exclusive lock on `path` (created if missing) until dropped, so that builds
/// running at the same time make a cached base once.
pub fn lock(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
    Ok(file)
}

/// Where bases are kept: the cache folder, its blobs, the epoch of their layers, and the
/// registry cache shared with other machines.
pub struct BaseStore<'a> {
    /// The cache folder (`bases/<key>/...`).
    pub cache: &'a Path,
    /// The blob store.
    pub blobs: &'a BlobStore,
    /// Seconds since 1970 for the layer's timestamps.
    pub epoch: u64,
    /// The registry cache (`--cache-from`, `--cache-to`).
    pub registry: RegistryCache<'a>,
    /// The site's signature policy a registry base must satisfy, when it has one.
    pub policy: Option<&'a registry::policy::SitePolicy>,
}

/// Makes (or finds in `cache`) the base layers, bottom first.
pub fn prepare(
    request: &BaseRequest,
    store: &BaseStore,
    project_root: &Path,
) -> Result<Vec<BaseLayer>, BaseError> {
    match request.bootstrap {
        BaseKind::Debootstrap => debootstrap(request, store),
        BaseKind::Dnf => dnf(request, store),
        BaseKind::Oci | BaseKind::Archive => from_file(request, store, project_root),
        BaseKind::Docker => from_registry(request, store),
    }
}

/// The record of a base's layer written with one `SOURCE_DATE_EPOCH`: the tree is shared, but
/// the layer's timestamps (so its digest) are the epoch's.
fn record_path(dir: &Path, epoch: u64) -> PathBuf {
    dir.join(format!("layer-{epoch}.json"))
}

/// The cached layer of the base in `dir` for `epoch`, checked before use: a tree changed since
/// it was made is removed (the base is made again), a blob whose content is not its digest is
/// removed (it is written again from the tree).
fn load_cached(dir: &Path, epoch: u64, blobs: &BlobStore) -> Option<Vec<BaseLayer>> {
    let record = record_path(dir, epoch);
    let text = std::fs::read_to_string(&record).ok()?;
    let Ok(mut cached) = serde_json::from_str::<BaseRecord>(&text) else {
        let _ = std::fs::remove_file(&record);
        return None;
    };
    let tree = checked_tree(dir)?;
    let [layer] = cached.layers.as_mut_slice() else {
        return None;
    };
    layer.tree = tree;
    // A record naming no sha256 digest is no base: it is made again (nothing is removed).
    let blob = blobs.path(&layer.blob.digest).ok()?;
    let checked = integrity::check_blob(
        &blob,
        &layer.blob.digest,
        layer.blob.size,
        cached.blob_stamp.as_ref(),
    );
    let Ok(stamp) = checked else {
        let _ = std::fs::remove_file(&blob);
        return None;
    };
    if cached.blob_stamp != Some(stamp) {
        cached.blob_stamp = Some(stamp);
        let _ = store_cached(dir, epoch, &cached);
    }
    crate::used::touch(&record);
    Some(cached.layers)
}

fn store_cached(dir: &Path, epoch: u64, cached: &BaseRecord) -> Result<(), BaseError> {
    let text = serde_json::to_vec_pretty(cached).map_err(|e| BaseError::Failed(e.to_string()))?;
    let record = record_path(dir, epoch);
    crate::atomic::write_file(&record, &text).map_err(io("writing the base cache"))
}

/// The cached base under `key`, or one from the registry cache, or a new one: `make` fills a
/// work folder (which it may have to create), the folder becomes the cached tree and one gzip
/// layer. A tree cached without this epoch's layer (or whose blob went) is not made again: only
/// its layer is written. Under an exclusive lock, so builds running at the same time make a
/// base once. The layer is shared through `--cache-to`.
fn cached_or_made(
    key: &str,
    created_by: String,
    store: &BaseStore,
    make: impl FnOnce(&Path) -> Result<(), BaseError>,
) -> Result<Vec<BaseLayer>, BaseError> {
    let (blobs, epoch) = (store.blobs, store.epoch);
    let dir = store
        .cache
        .join("bases")
        .join(key.trim_start_matches("sha256:"));
    let _guard = lock(&dir.with_extension("lock")).map_err(io("locking the base cache"))?;
    let layers = match load_cached(&dir, epoch, blobs) {
        Some(layers) => layers,
        None => match from_registry_cache(key, &created_by, store, &dir)? {
            Some(layers) => return Ok(layers),
            None => write_base(&dir, created_by.clone(), blobs, epoch, make)?,
        },
    };
    let [layer] = layers.as_slice() else {
        return Ok(layers);
    };
    let record = Record {
        tag: remote::base_tag(key, epoch),
        blob: layer.blob.clone(),
        created_by,
        role: None,
    };
    store.registry.share("the base", &record, blobs);
    Ok(layers)
}

/// The base's tree and layer, made or written from the tree cached in `dir`.
fn write_base(
    dir: &Path,
    created_by: String,
    blobs: &BlobStore,
    epoch: u64,
    make: impl FnOnce(&Path) -> Result<(), BaseError>,
) -> Result<Vec<BaseLayer>, BaseError> {
    let made_now = checked_tree(dir).is_none();
    std::fs::create_dir_all(dir).map_err(io("creating the base cache"))?;
    let tree = dir.join("tree");
    if made_now {
        let work = dir.join(format!("tree.tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&work);
        if let Err(e) = make(&work) {
            // A base that failed (a layer that is not its diff_id, say) leaves nothing behind.
            let _ = std::fs::remove_dir_all(&work);
            return Err(e);
        }
        let _ = std::fs::remove_dir_all(&tree);
        std::fs::rename(&work, &tree).map_err(io("caching the base"))?;
        let stamp = integrity::tree_stamp(&tree).map_err(io("reading the base"))?;
        std::fs::write(dir.join("tree.stamp"), stamp).map_err(io("writing the base cache"))?;
    }
    let blob = blobs
        .write_layer(&tree, Source::Tree, epoch, Codec::gzip(6))
        .map_err(io("writing the base layer"))?;
    let cached = BaseRecord {
        blob_stamp: blobs
            .path(&blob.digest)
            .and_then(|path| FileStamp::of(&path))
            .ok(),
        layers: vec![BaseLayer {
            blob,
            tree,
            created_by,
            made_now,
            from_registry: false,
        }],
    };
    store_cached(dir, epoch, &cached)?;
    Ok(cached.layers)
}

/// The base from the registry cache (`--cache-from`), when this machine has no tree of it: its
/// layer unpacked into `dir`'s tree and recorded as if made here.
fn from_registry_cache(
    key: &str,
    created_by: &str,
    store: &BaseStore,
    dir: &Path,
) -> Result<Option<Vec<BaseLayer>>, BaseError> {
    if checked_tree(dir).is_some() || !store.registry.remote.reads() {
        return Ok(None);
    }
    std::fs::create_dir_all(dir).map_err(io("creating the base cache"))?;
    let work = dir.join(format!("tree.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let tag = remote::base_tag(key, store.epoch);
    let Some(record) = store.registry.take(
        "the base",
        &tag,
        store.blobs,
        &work,
        engine::archive::Whiteouts::Apply,
    ) else {
        return Ok(None);
    };
    let tree = dir.join("tree");
    let _ = std::fs::remove_dir_all(&tree);
    std::fs::rename(&work, &tree).map_err(io("caching the base"))?;
    let stamp = integrity::tree_stamp(&tree).map_err(io("reading the base"))?;
    std::fs::write(dir.join("tree.stamp"), stamp).map_err(io("writing the base cache"))?;
    let cached = BaseRecord {
        blob_stamp: store
            .blobs
            .path(&record.blob.digest)
            .and_then(|path| FileStamp::of(&path))
            .ok(),
        layers: vec![BaseLayer {
            blob: record.blob,
            tree,
            created_by: created_by.to_owned(),
            made_now: false,
            from_registry: true,
        }],
    };
    store_cached(dir, store.epoch, &cached)?;
    Ok(Some(cached.layers))
}

fn debootstrap(request: &BaseRequest, store: &BaseStore) -> Result<Vec<BaseLayer>, BaseError> {
    let suite = &request.build_from;
    let archive = match &request.debootstrap_mirror {
        Some(url) => url.clone(),
        None => mirror::debian_archive::host_archive(suite).ok_or_else(|| {
            BaseError::Failed(format!(
                "this machine's apt sources name no archive for '{suite}' with main; set debootstrap_mirror in the recipe"
            ))
        })?,
    };
    let mut include = request.include.clone();
    include.sort();
    let key = digest_of(
        format!(
            "debootstrap\0minbase\0{suite}\0{archive}\0{}\0archives-emptied",
            include.join(",")
        )
        .as_bytes(),
    );
    let created_by = format!("debootstrap --variant=minbase {suite}");
    cached_or_made(&key, created_by, store, |work| {
        let mut command = crate::rootless_base::command("debootstrap");
        command.arg("--variant=minbase");
        // The packages it downloads are kept for the next base of this suite (debootstrap checks
        // each against the archive's index before use); the base made is the same.
        let packages = store.cache.join("packages/debootstrap").join(suite);
        let plain_name = !suite.contains('/') && !suite.starts_with('.');
        if plain_name && std::fs::create_dir_all(&packages).is_ok() {
            command.arg(format!("--cache-dir={}", packages.display()));
        }
        if !include.is_empty() {
            command.arg(format!("--include={}", include.join(",")));
        }
        let output = command
            .arg(suite)
            .arg(work)
            .arg(&archive)
            .output()
            .map_err(|e| {
                BaseError::Failed(format!(
                    "cannot run debootstrap ({e}); install it (apt-get install debootstrap)"
                ))
            })?;
        if output.status.success() {
            crate::rootless_base::devices_as_root_makes_them(work)
                .map_err(io("making the base's /dev"))?;
            return empty_apt_archives(work);
        }
        let log =
            std::fs::read_to_string(work.join("debootstrap/debootstrap.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = &lines[lines.len().saturating_sub(12)..];
        Err(BaseError::Failed(format!(
            "debootstrap {suite} failed: {}\n{}",
            String::from_utf8_lossy(&output.stderr).trim(),
            tail.join("\n")
        )))
    })
}

/// A base made by the building machine's dnf (see `dnf_base`), cached by its release,
/// repositories and packages.
fn dnf(request: &BaseRequest, store: &BaseStore) -> Result<Vec<BaseLayer>, BaseError> {
    let releasever = &request.build_from;
    dnf_base::check_release(releasever).map_err(BaseError::Unsupported)?;
    let repos =
        dnf_base::repos_from_vars(request.dnf_repos.as_ref()).map_err(BaseError::Unsupported)?;
    let mut include = request.include.clone();
    include.sort();
    if include.is_empty() {
        return Err(BaseError::Unsupported(
            "bootstrap: dnf needs bootstrap_include: the packages the base is made of (for Rocky 9, at least rocky-release, dnf and bash)".into(),
        ));
    }
    let key = digest_of(dnf_base::identity(releasever, &repos, &include).as_bytes());
    let created_by = format!(
        "dnf --installroot --releasever={releasever} install {}",
        include.join(" ")
    );
    let packages = store.cache.join("packages/dnf");
    cached_or_made(&key, created_by, store, |work| {
        dnf_base::install(work, releasever, &repos, &include, &packages).map_err(BaseError::Failed)
    })
}

/// Removes the packages debootstrap leaves in the base's apt archives (about 30 MB every node
/// would hold in RAM; the package cache keeps them for the next base).
fn empty_apt_archives(root: &Path) -> Result<(), BaseError> {
    let archives = root.join(engine::package_cache::APT_ARCHIVES);
    let Ok(entries) = std::fs::read_dir(&archives) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "deb") && path.is_file() {
            std::fs::remove_file(&path).map_err(io(format!("removing {}", path.display())))?;
        }
    }
    Ok(())
}

/// One layer file of a base and what the image says it is.
struct LayerFile {
    path: PathBuf,
    compression: Compression,
    /// The config's `rootfs.diff_ids` entry: what its tar must hash to.
    diff_id: String,
    /// How messages name it: its digest, or its docker-archive member.
    name: String,
}

/// The layer files of a base, bottom first, with their digests.
struct LayerFiles {
    files: Vec<LayerFile>,
    digests: Vec<String>,
    /// For messages and the layer's history (`docker docker.io/rockylinux/rockylinux:9.5`).
    what: String,
}

/// The config's `rootfs.diff_ids`, one for each of `count` layers: a base whose config lists
/// other diff_ids cannot have its layers checked, and is refused.
fn config_diff_ids(config: &Json, count: usize, what: &str) -> Result<Vec<String>, BaseError> {
    let ids: Vec<String> = config["rootfs"]["diff_ids"]
        .as_array()
        .map(|ids| {
            ids.iter()
                .filter_map(Json::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if ids.len() != count {
        return Err(BaseError::Failed(format!(
            "{what}: its config lists {} diff_ids for {count} layers, so its layers cannot be checked; rebuild or re-pull the image",
            ids.len()
        )));
    }
    Ok(ids)
}

/// A base pulled from a registry (linux/amd64), every blob verified against its digest.
fn from_registry(request: &BaseRequest, store: &BaseStore) -> Result<Vec<BaseLayer>, BaseError> {
    let reference = registry::Reference::parse(&request.build_from)
        .map_err(|e| BaseError::Unsupported(format!("build_from: {e}")))?;
    // From a registries.conf mirror when the site has one; the image names the reference as
    // the recipe wrote it, wherever its bytes came from.
    let conf = registry::RegistriesConf::load().map_err(|e| BaseError::Failed(e.to_string()))?;
    let (pulled, _) = registry::pull_via(&conf, &request.build_from, &store.cache.join("registry"))
        .map_err(|e| BaseError::Failed(format!("pulling {reference}: {e}")))?;
    // The site's policy decides before any layer is used; a refused base's blobs go.
    if let Some(policy) = store.policy {
        if let Err(why) = registry::signature::check(policy, &reference, &pulled.manifest_digest) {
            for layer in &pulled.layers {
                let _ = std::fs::remove_file(&layer.path);
            }
            return Err(BaseError::Failed(why));
        }
    }
    let what = format!("docker {reference}");
    let diff_ids = config_diff_ids(&pulled.config, pulled.layers.len(), &what)?;
    let layers = LayerFiles {
        files: pulled
            .layers
            .iter()
            .zip(diff_ids)
            .map(|(l, diff_id)| LayerFile {
                path: l.path.clone(),
                compression: Compression::of_media_type(&l.media_type),
                diff_id,
                name: l.digest.clone(),
            })
            .collect(),
        digests: pulled.layers.iter().map(|l| l.digest.clone()).collect(),
        what,
    };
    apply_layers(layers, store)
}

/// Layers of an OCI layout folder or a docker-archive, extracted to overlay-form folders. Each
/// blob of a layout must be its descriptor's digest and size; each tar, its config's diff_id.
fn from_file(
    request: &BaseRequest,
    store: &BaseStore,
    project_root: &Path,
) -> Result<Vec<BaseLayer>, BaseError> {
    let source = project_root.join(&request.build_from);
    let what = format!("{} {}", request.bootstrap, request.build_from);
    let oci = request.bootstrap == BaseKind::Oci;
    let unpacked;
    // The one image reader every part of imgbuild uses; its digests are checked before they
    // name a file.
    let (image, folder) = if oci {
        let image = oci_layout::Source::folder(&source).oci_image();
        (image, source.clone())
    } else {
        unpacked = tempfile::tempdir_in(store.cache).map_err(io("unpacking the archive"))?;
        let file =
            std::fs::File::open(&source).map_err(io(format!("opening {}", source.display())))?;
        tar::Archive::new(file)
            .unpack(unpacked.path())
            .map_err(io(format!("reading {}", source.display())))?;
        let image = oci_layout::Source::folder(unpacked.path()).docker_image();
        (image, unpacked.path().to_owned())
    };
    let image = image.map_err(|e| BaseError::Failed(format!("{}: {e}", source.display())))?;
    if image.layers.is_empty() {
        return Err(BaseError::Failed(format!(
            "{} has no layers",
            source.display()
        )));
    }
    let diff_ids = config_diff_ids(&image.config, image.layers.len(), &what)?;
    let mut files = Vec::new();
    let mut digests = Vec::new();
    for (layer, diff_id) in image.layers.iter().zip(diff_ids) {
        let path = folder.join(&layer.member);
        let mut f =
            std::fs::File::open(&path).map_err(io(format!("reading layer {}", path.display())))?;
        let mut hasher = crate::hashing::HashingWriter::new(std::io::sink());
        std::io::copy(&mut f, &mut hasher).map_err(io("hashing a layer"))?;
        let (_, digest, size) = hasher.finish();
        if oci && (digest != layer.name || layer.size.is_some_and(|s| s != size)) {
            return Err(BaseError::Failed(format!(
                "{what}: layer {} is {digest} ({size} bytes), not what its manifest says ({}, {} bytes): the blob was changed or cut short; copy the image again",
                layer.name,
                layer.name,
                layer.size.map_or("?".into(), |s| s.to_string()),
            )));
        }
        let compression = match &layer.media_type {
            Some(media_type) if oci => Compression::of_media_type(media_type),
            _ if oci => Compression::None,
            // A docker-archive's manifest has no media types: its members are told by their
            // first bytes (docker save writes plain tars, skopeo keeps gzip).
            _ => sniffed(&path)?,
        };
        files.push(LayerFile {
            path,
            compression,
            diff_id,
            name: layer.name.clone(),
        });
        digests.push(digest);
    }
    apply_layers(
        LayerFiles {
            files,
            digests,
            what,
        },
        store,
    )
}

/// The compression of the file at `path`, told by its first bytes.
fn sniffed(path: &Path) -> Result<Compression, BaseError> {
    let file = std::fs::File::open(path).map_err(io(format!("reading {}", path.display())))?;
    Compression::sniff(&mut std::io::BufReader::new(file))
        .map_err(io(format!("reading {}", path.display())))
}

/// Applies the layers in order into one tree (whiteouts delete), cached by their digests, which
/// becomes one base layer: overlayfs needs lowers in its own whiteout form, and one tree is
/// simpler to stack. Every layer is read to its end and held to its diff_id; a layer that is
/// not leaves nothing cached.
fn apply_layers(layers: LayerFiles, store: &BaseStore) -> Result<Vec<BaseLayer>, BaseError> {
    let key = digest_of(layers.digests.join("\n").as_bytes());
    let LayerFiles { files, what, .. } = layers;
    cached_or_made(&key, what.clone(), store, |work| {
        std::fs::create_dir_all(work).map_err(io("unpacking the base"))?;
        let fs = engine::rootfs::RootFs::plain(work).map_err(io("unpacking the base"))?;
        for (i, file) in files.iter().enumerate() {
            crate::apply::apply_layer(&fs, &file.path, file.compression, Some(&file.diff_id))
                .map_err(|e| {
                    BaseError::Failed(format!("base layer {i} ({}) of {what}: {e}", file.name))
                })?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_is_made_once_and_then_found_in_the_cache() {
        let cache = tempfile::tempdir().expect("cache");
        let blobs = BlobStore::new(&cache.path().join("blobs")).expect("blobs");
        let (remote, reporter) = (
            crate::cache::remote::RemoteCache::default(),
            engine::events::MemoryReporter::default(),
        );
        let store = |epoch| BaseStore {
            cache: cache.path(),
            blobs: &blobs,
            epoch,
            registry: RegistryCache {
                remote: &remote,
                reporter: &reporter,
            },
            policy: None,
        };
        let make = |work: &Path| {
            std::fs::create_dir_all(work.join("etc")).map_err(io("test"))?;
            std::fs::write(work.join("etc/os-release"), "ID=test\n").map_err(io("test"))
        };
        let first = cached_or_made("sha256:k", "test".into(), &store(0), make).expect("made");
        assert!(first[0].made_now, "the first build makes it");
        let again = cached_or_made("sha256:k", "test".into(), &store(0), |_| {
            Err(BaseError::Failed("must not be made again".into()))
        })
        .expect("found");
        assert!(!again[0].made_now, "the second finds it");
        assert_eq!(again[0].blob.digest, first[0].blob.digest);

        // Another SOURCE_DATE_EPOCH, or a blob that went: the tree is kept, the layer written.
        let other_epoch = cached_or_made("sha256:k", "test".into(), &store(1), |_| {
            Err(BaseError::Failed("the tree is there".into()))
        })
        .expect("layer written from the cached tree");
        assert!(!other_epoch[0].made_now);
        assert_ne!(other_epoch[0].blob.digest, first[0].blob.digest);
        std::fs::remove_file(blobs.path(&first[0].blob.digest).expect("digest"))
            .expect("remove blob");
        let rewritten = cached_or_made("sha256:k", "test".into(), &store(0), |_| {
            Err(BaseError::Failed("the tree is there".into()))
        })
        .expect("blob written again");
        assert_eq!(
            rewritten[0].blob.digest, first[0].blob.digest,
            "reproducible"
        );

        // A flipped byte in the blob: found by its hash, written again from the tree.
        let blob = blobs.path(&first[0].blob.digest).expect("digest");
        let mut bytes = std::fs::read(&blob).expect("blob");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(&blob, bytes).expect("flip");
        let healed = cached_or_made("sha256:k", "test".into(), &store(0), |_| {
            Err(BaseError::Failed("the tree is whole".into()))
        })
        .expect("blob written again");
        assert_eq!(healed[0].blob.digest, first[0].blob.digest);
        assert!(!healed[0].made_now);

        // A changed file in the tree: the base is made again.
        std::fs::write(first[0].tree.join("etc/os-release"), "ID=tampered\n").expect("tamper");
        let remade = cached_or_made("sha256:k", "test".into(), &store(0), make).expect("made");
        assert!(remade[0].made_now, "a changed tree is not used");
        assert_eq!(remade[0].blob.digest, first[0].blob.digest);
    }
}
