//! Building an image, as its steps: the base; one layer per role, reused from the cache when
//! nothing it depends on changed, otherwise run in an overlay sandbox (`role_layer`); the image
//! config and manifest, verify and the report (`finish`); the outputs (`outputs`).

mod finish;
mod keys;
mod outputs;
mod role_layer;
mod room;
pub use room::{free_bytes, gigabytes};

use std::path::{Path, PathBuf};
use std::time::Instant;

use engine::events::{Event, Reporter};
use engine::executor::{ExecOptions, Executor, TaskFailure};
use engine::modules::Downloader;
use planner::Plan;

use crate::base::{self, BaseError, BaseRequest};
use crate::blobs::{BlobStore, LayerBlob};
use crate::cache::remote::RegistryCache;
use crate::cache::LayerCache;
use crate::compression::Codec;
use crate::oci::{self, ImageSpec};

/// Which outputs to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Formats {
    /// An OCI image layout (`out/<image>/oci`).
    pub oci: bool,
    /// A docker-archive (`out/<image>/<image>.tar`), what Warewulf imports.
    pub docker_archive: bool,
    /// A plain rootfs folder (`out/<image>/rootfs`).
    pub chroot: bool,
}

impl Default for Formats {
    fn default() -> Self {
        Self {
            oci: true,
            docker_archive: true,
            chroot: false,
        }
    }
}

/// How to build.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The project root (role files are read from it).
    pub project_root: PathBuf,
    /// Where outputs go (`out/<image>/...`).
    pub out: PathBuf,
    /// Which outputs.
    pub formats: Formats,
    /// Run every role even when its layer is cached.
    pub no_cache: bool,
    /// The imgbuild binary (the sandbox re-runs it).
    pub exe: PathBuf,
    /// The cache folder (bases, layers, blobs).
    pub cache_dir: PathBuf,
    /// Seconds since 1970 for every timestamp in the image.
    pub epoch: u64,
    /// How layers are compressed (the base layer stays gzip: it is shared by every image).
    pub codec: Codec,
    /// Write one layer holding the whole rootfs instead of one per role.
    pub squash: bool,
    /// Run verify before writing the outputs (and fail the build when a check fails).
    pub verify: bool,
    /// The layer cache kept in a registry (`--cache-from`, `--cache-to`), when one is set.
    pub remote: std::sync::Arc<crate::cache::remote::RemoteCache>,
}

impl Settings {
    /// The package download cache every build of this cache folder shares (apt's `.deb`s).
    pub fn package_pool(&self) -> PathBuf {
        self.cache_dir.join("packages/apt")
    }
}

/// One layer of a build.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerReport {
    /// The role (or `base`).
    pub role: String,
    /// Compressed digest.
    pub digest: String,
    /// Compressed size.
    pub size: u64,
    /// Uncompressed size (of its tar).
    pub unpacked: u64,
    /// Uncompressed digest.
    pub diff_id: String,
    /// Reused from the cache.
    pub cached: bool,
    /// Taken from the registry cache (`--cache-from`): not built here.
    pub from_registry: bool,
    /// Seconds this build spent on it.
    pub seconds: f64,
    /// Why it was rebuilt.
    pub why: Vec<String>,
    /// When the layer was built (seconds since 1970; 0 when unknown), and how long that took:
    /// for a cached layer, its first build.
    pub built_at: u64,
    /// Seconds its build took.
    pub built_seconds: f64,
    /// What each task of the role cost when the layer was built (empty for the base and for
    /// layers from a registry).
    pub costs: Vec<engine::costs::TaskCost>,
}

/// What a build made.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildReport {
    /// The image.
    pub image: String,
    /// Manifest digest (the image's identity).
    pub manifest: String,
    /// Config digest.
    pub config: String,
    /// The layers, bottom first.
    pub layers: Vec<LayerReport>,
    /// The outputs written.
    pub outputs: Vec<PathBuf>,
    /// Seconds the build took.
    pub seconds: f64,
    /// What verify found, when it ran.
    pub verify: Option<verify::Report>,
    /// What the build-only packages step removed, when the recipe names any.
    pub build_only: Option<BuildOnlyRemoval>,
}

/// What the build-only packages step removed (`build_only_packages`), read back from its
/// registered result, which a cached layer keeps.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BuildOnlyRemoval {
    /// The packages removed, named ones and what only they pulled in.
    pub removed: Vec<String>,
    /// The image's apparent size before the step (what a node would have held in RAM).
    pub bytes_before: u64,
    /// And after it.
    pub bytes_after: u64,
    /// The kernel modules no package owns (DKMS's, an installer's): all still in the image.
    pub modules_kept: Vec<String>,
    /// Those of them a removal script deleted, which the step put back.
    #[serde(default)]
    pub modules_restored: Vec<String>,
}

impl BuildOnlyRemoval {
    /// The step's result among the build's registered variables.
    fn from_registered(registered: &serde_json::Value) -> Option<BuildOnlyRemoval> {
        let value = registered.get(planner::build_only::REGISTER)?;
        serde_json::from_value(value.clone()).ok()
    }
}

/// Why a build failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The base could not be had.
    #[error(transparent)]
    Base(#[from] BaseError),
    /// A task failed.
    #[error("{0}")]
    Task(Box<TaskFailure>),
    /// The base rootfs is not what the recipe says it is (its distribution or version).
    #[error("{0}")]
    Facts(String),
    /// The sandbox failed.
    #[error("{0}")]
    Sandbox(String),
    /// The image was built but verify found problems (no output was written; see the report).
    #[error("verify failed, so no output was written:\n{0}")]
    Verify(String),
    /// An output cannot be written where it was asked for.
    #[error("{0}")]
    Output(String),
    /// A layer could not be applied to a folder.
    #[error("applying layer {digest}: {message}")]
    Layer {
        /// The layer's digest.
        digest: String,
        /// What went wrong.
        message: String,
    },
    /// A step needs more disk than its filesystem has free (nothing of it was written).
    #[error("{0}")]
    NoSpace(String),
    /// Reading or writing files failed.
    #[error("{what}: {cause}")]
    Io {
        /// What was being done.
        what: String,
        /// The error (not a `source`: the message holds it, and printing the chain would say
        /// it twice).
        cause: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BuildError {
    let what = what.into();
    move |cause| BuildError::Io { what, cause }
}

/// The layers built so far, bottom first: each blob with its history line, the folder holding
/// its files, and what the build reports of it.
#[derive(Debug, Default)]
pub(crate) struct Stack {
    layers: Vec<(LayerBlob, String)>,
    trees: Vec<PathBuf>,
    reports: Vec<LayerReport>,
}

/// The caches a build reads and fills, held for the whole build.
pub(crate) struct Stores {
    blobs: BlobStore,
    cache: LayerCache,
    /// The shared lock on the cache, held while the build runs.
    _in_use: std::fs::File,
}

impl Stores {
    fn open(settings: &Settings) -> Result<Stores, BuildError> {
        let blobs =
            BlobStore::new(&settings.cache_dir.join("blobs")).map_err(io("the blob cache"))?;
        let cache = LayerCache::new(&settings.cache_dir).map_err(io("the layer cache"))?;
        // Held until the build ends: `cache prune` never removes what a running build uses.
        let in_use = cache.hold().map_err(io("the layer cache"))?;
        Ok(Stores {
            blobs,
            cache,
            _in_use: in_use,
        })
    }
}

/// Step 1: the base (debootstrapped, pulled or read from an archive), as the first layers.
fn base(
    request: &BaseRequest,
    settings: &Settings,
    stores: &Stores,
    reporter: &dyn Reporter,
) -> Result<Stack, BuildError> {
    let started = Instant::now();
    let store = base::BaseStore {
        cache: &settings.cache_dir,
        blobs: &stores.blobs,
        epoch: settings.epoch,
        registry: RegistryCache {
            remote: &settings.remote,
            reporter,
        },
    };
    let base_layers = base::prepare(request, &store, &settings.project_root)?;
    for layer in base_layers.iter().filter(|l| l.from_registry) {
        reporter.event(&Event::Note {
            message: format!(
                "base: layer {} from the registry cache {}",
                layer.blob.digest,
                settings.remote.source_name()
            ),
        });
    }
    Ok(Stack {
        layers: base_layers
            .iter()
            .map(|b| (b.blob.clone(), b.created_by.clone()))
            .collect(),
        trees: base_layers.iter().map(|b| b.tree.clone()).collect(),
        reports: base_layers
            .iter()
            .map(|b| LayerReport {
                role: "base".into(),
                digest: b.blob.digest.clone(),
                size: b.blob.size,
                unpacked: b.blob.diff_size,
                diff_id: b.blob.diff_id.clone(),
                cached: !b.made_now,
                from_registry: b.from_registry,
                seconds: started.elapsed().as_secs_f64(),
                why: Vec::new(),
                built_at: 0,
                built_seconds: 0.0,
                costs: Vec::new(),
            })
            .collect(),
    })
}

/// Builds `plan` and writes its outputs: the base, each role's layer, the image, verify and the
/// report, then the outputs (only when verify passed).
pub fn build(
    plan: &Plan,
    settings: &Settings,
    downloads: &dyn Downloader,
    reporter: &dyn Reporter,
    pin: &dyn Fn(&str) -> Option<String>,
) -> Result<BuildReport, BuildError> {
    let started = Instant::now();
    let stores = Stores::open(settings)?;
    let step = |what: String| reporter.event(&Event::Step { what });
    let request = BaseRequest::from_vars(&plan.vars);
    step(format!(
        "base: {} {} (cached after the first build)",
        request.bootstrap, request.build_from
    ));
    let mut stack = base(&request, settings, &stores, reporter)?;
    let mut roles = role_layer::Roles {
        plan,
        settings,
        stores: &stores,
        reporter,
        pin,
        executor: Executor::new(
            plan,
            &settings.project_root,
            downloads,
            reporter,
            ExecOptions::default(),
        ),
        facts_checked: false,
        secret_seen: false,
    };
    for role in &plan.roles {
        roles.add_layer(role, &mut stack)?;
    }
    let build_only = BuildOnlyRemoval::from_registered(&roles.executor.registered());
    step("the image: config and manifest".into());
    let image = finish::image(plan, settings, &stores.blobs, &mut stack)?;
    if settings.verify {
        step("verify: unpacking the image and checking it".into());
    }
    let verified = finish::verify(plan, settings, &stores.blobs, &image)?;
    let made = finish::Made {
        image: &image,
        stack: &stack,
        verified: verified.as_ref(),
        build_only: build_only.as_ref(),
    };
    finish::report(plan, &made, started)?;
    step(format!("writing the outputs to {}", image.dir.display()));
    let outputs = outputs::write(plan, settings, &stores.blobs, &image)?;
    Ok(BuildReport {
        image: plan.image.clone(),
        manifest: image.written.manifest.clone(),
        config: image.written.config.clone(),
        layers: stack.reports,
        outputs,
        seconds: started.elapsed().as_secs_f64(),
        verify: verified,
        build_only,
    })
}

/// Applies the layers in order into a plain folder (`--format chroot`), through a temporary
/// folder and a rename.
pub fn write_rootfs(dest: &Path, blobs: &BlobStore, spec: &ImageSpec) -> Result<(), BuildError> {
    let parent = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io("creating the output folder"))?;
    let tmp = tempfile::Builder::new()
        .prefix(".rootfs-")
        .tempdir_in(parent)
        .map_err(io("creating the rootfs folder"))?;
    let fs = engine::rootfs::RootFs::plain(tmp.path()).map_err(io("opening the rootfs folder"))?;
    for (layer, _) in &spec.layers {
        let file = std::fs::File::open(blobs.path(&layer.digest)).map_err(io("reading a layer"))?;
        let reader = layer
            .compression
            .reader(std::io::BufReader::with_capacity(1 << 20, file))
            .map_err(io("reading a layer"))?;
        let limits = engine::archive::Limits {
            allow_devices: true,
            whiteouts: engine::archive::Whiteouts::Apply,
            ..engine::archive::Limits::default()
        };
        engine::archive::extract_tar(reader, &fs, Path::new("/"), limits).map_err(|e| {
            BuildError::Layer {
                digest: layer.digest.clone(),
                message: e.to_string(),
            }
        })?;
    }
    let kept = tmp.keep();
    std::fs::set_permissions(&kept, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .map_err(io("the rootfs folder"))?;
    oci::replace(&kept, dest).map_err(io(format!("writing {}", dest.display())))
}
