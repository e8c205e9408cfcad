//! Building an image: the base, then one layer per role (reused from the cache when nothing it
//! depends on changed, otherwise run in an overlay sandbox), then the outputs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use engine::events::{Event, Reporter};
use engine::executor::{ExecOptions, Executor, TaskFailure};
use engine::modules::Downloader;
use engine::sandbox::{ChrootTarget, Overlay, SandboxSpec};
use planner::plan::Step;
use planner::Plan;
use serde_json::Value as Json;

use crate::base::{self, BaseError, BaseRequest};
use crate::blobs::{BlobStore, LayerBlob};
use crate::cache::{Entry, Inputs, LayerCache};
use crate::compression::Codec;
use crate::hashing::digest_of;
use crate::layer::Source;
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
    /// Uncompressed digest.
    pub diff_id: String,
    /// Reused from the cache.
    pub cached: bool,
    /// Seconds this build spent on it.
    pub seconds: f64,
    /// Why it was rebuilt.
    pub why: Vec<String>,
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
    /// The rootfs is not what the recipe says.
    #[error("{0}")]
    Facts(String),
    /// The sandbox failed.
    #[error("{0}")]
    Sandbox(String),
    /// The image was built but verify found problems (no output was written; see the report).
    #[error("verify failed, so no output was written:\n{0}")]
    Verify(String),
    /// Reading or writing files failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BuildError {
    let what = what.into();
    move |source| BuildError::Io { what, source }
}

fn role_of(step: &Step) -> &str {
    match step {
        Step::Task(t) => &t.role,
        Step::Block(b) => &b.role,
    }
}

/// The digest of a project file or folder (names and bytes, in order).
fn file_digest(path: &Path) -> String {
    fn walk(path: &Path, out: &mut Vec<u8>) {
        if path.is_dir() {
            let mut names: Vec<_> = std::fs::read_dir(path)
                .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
                .unwrap_or_default();
            names.sort();
            for child in names {
                out.extend_from_slice(
                    child
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                        .as_bytes(),
                );
                out.push(0);
                walk(&child, out);
            }
        } else {
            out.extend_from_slice(digest_of(&std::fs::read(path).unwrap_or_default()).as_bytes());
        }
    }
    let mut bytes = Vec::new();
    walk(path, &mut bytes);
    digest_of(&bytes)
}

/// The inputs of a role's layer.
fn role_inputs(
    plan: &Plan,
    role: &str,
    steps: &[Step],
    parent: &str,
    project_root: &Path,
    registered: &Json,
    pin: &dyn Fn(&str) -> Option<String>,
) -> Inputs {
    let tasks_json = serde_json::to_vec(&(steps, &plan.handlers, &plan.facts)).unwrap_or_default();
    let mut files = BTreeMap::new();
    let mut artifacts = BTreeMap::new();
    for step in steps {
        for task in step.tasks() {
            if let Some(file) = &task.local_file {
                files.insert(file.clone(), file_digest(&project_root.join(file)));
            }
            for url in task.download_urls() {
                artifacts.insert(
                    mirror::url_path(&url),
                    pin(&url).unwrap_or_else(|| "unpinned".into()),
                );
            }
        }
    }
    let _ = role;
    Inputs {
        imgbuild: env!("CARGO_PKG_VERSION").to_owned(),
        parent: parent.to_owned(),
        tasks: digest_of(&tasks_json),
        files,
        artifacts,
        registered: digest_of(&serde_json::to_vec(registered).unwrap_or_default()),
    }
}

/// A digest of every input file of the plan, for the `io.imgbuild.recipe-digest` label.
fn recipe_digest(plan: &Plan, project_root: &Path) -> String {
    let listing: Vec<String> = plan
        .inputs
        .iter()
        .map(|f| format!("{f} {}", file_digest(&project_root.join(f))))
        .collect();
    digest_of(listing.join("\n").as_bytes())
}

fn labels(plan: &Plan, project_root: &Path, epoch: u64) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    labels.insert("org.opencontainers.image.title".into(), plan.image.clone());
    let intent = &plan.intent;
    if intent.initramfs {
        labels.insert("io.imgbuild.initramfs".into(), "yes".into());
    }
    labels.insert(
        "org.opencontainers.image.created".into(),
        oci::rfc3339(epoch),
    );
    labels.insert("org.opencontainers.image.vendor".into(), "imgbuild".into());
    for (key, value) in [
        ("io.imgbuild.kernel", &intent.kernel),
        ("io.imgbuild.mofed", &intent.mofed),
        ("io.imgbuild.nvidia", &intent.nvidia),
    ] {
        if let Some(value) = value {
            labels.insert(key.into(), value.clone());
        }
    }
    labels.insert(
        "io.imgbuild.recipe-digest".into(),
        recipe_digest(plan, project_root),
    );
    labels
}

/// Builds `plan` and writes its outputs.
pub fn build(
    plan: &Plan,
    settings: &Settings,
    downloads: &dyn Downloader,
    reporter: &dyn Reporter,
    pin: &dyn Fn(&str) -> Option<String>,
) -> Result<BuildReport, BuildError> {
    let started = Instant::now();
    let blobs = BlobStore::new(&settings.cache_dir.join("blobs")).map_err(io("the blob cache"))?;
    let cache = LayerCache::new(&settings.cache_dir).map_err(io("the layer cache"))?;
    // Held until the build ends: `cache prune` never removes what a running build uses.
    let _in_use = cache.hold().map_err(io("the layer cache"))?;
    let request = BaseRequest::from_vars(&plan.vars);
    let base_started = Instant::now();
    let base_layers = base::prepare(
        &request,
        &settings.cache_dir,
        &blobs,
        settings.epoch,
        &settings.project_root,
    )?;
    let mut layers: Vec<(LayerBlob, String)> = base_layers
        .iter()
        .map(|b| (b.blob.clone(), b.created_by.clone()))
        .collect();
    let mut trees: Vec<PathBuf> = base_layers.iter().map(|b| b.tree.clone()).collect();
    let mut reports: Vec<LayerReport> = base_layers
        .iter()
        .map(|b| LayerReport {
            role: "base".into(),
            digest: b.blob.digest.clone(),
            size: b.blob.size,
            diff_id: b.blob.diff_id.clone(),
            cached: true,
            seconds: base_started.elapsed().as_secs_f64(),
            why: Vec::new(),
        })
        .collect();
    let kernel = plan.intent.kernel.clone().unwrap_or_default();
    let mut executor = Executor::new(
        plan,
        &settings.project_root,
        downloads,
        reporter,
        ExecOptions::default(),
    );
    let mut facts_checked = false;
    for role in &plan.roles {
        let role_started = Instant::now();
        let steps: Vec<Step> = plan
            .tasks
            .iter()
            .filter(|s| role_of(s) == role)
            .cloned()
            .collect();
        // The whole stack below, not only the layer under this one: two different stacks can
        // end in layers with the same digest.
        let chain: Vec<&str> = layers.iter().map(|(l, _)| l.digest.as_str()).collect();
        let parent = digest_of(chain.join("\n").as_bytes());
        let inputs = role_inputs(
            plan,
            role,
            &steps,
            &parent,
            &settings.project_root,
            &executor.registered(),
            pin,
        );
        let hit = if settings.no_cache {
            None
        } else {
            cache.get(&inputs)
        };
        let entry = match hit.filter(|e| blobs.has(&e.blob.digest)) {
            Some(mut entry) => {
                executor.restore_registered(&entry.registered);
                if entry.blob.compression != settings.codec.compression {
                    // The same files, compressed the way this build asks.
                    entry.blob = blobs
                        .write_layer(
                            &entry.tree,
                            Source::OverlayUpper,
                            settings.epoch,
                            settings.codec,
                        )
                        .map_err(io(format!("recompressing the {role} layer")))?;
                }
                reporter.event(&Event::Layer {
                    role: role.clone(),
                    digest: entry.blob.digest.clone(),
                    size: entry.blob.size,
                    cached: true,
                    why: Vec::new(),
                });
                reports.push(LayerReport {
                    role: role.clone(),
                    digest: entry.blob.digest.clone(),
                    size: entry.blob.size,
                    diff_id: entry.blob.diff_id.clone(),
                    cached: true,
                    seconds: role_started.elapsed().as_secs_f64(),
                    why: Vec::new(),
                });
                entry
            }
            None => {
                let why = match cache.last(&plan.image, role) {
                    Some(last) if settings.no_cache => {
                        let _ = last;
                        vec!["--no-cache".to_owned()]
                    }
                    Some(last) => inputs.changes_since(&last),
                    None => Vec::new(),
                };
                let work = cache
                    .work_dir()
                    .map_err(io("creating the role's work folder"))?;
                let (upper, overlay_work, merged, scratch) = (
                    work.path().join("upper"),
                    work.path().join("work"),
                    work.path().join("merged"),
                    work.path().join("tmp"),
                );
                for dir in [&upper, &overlay_work, &merged, &scratch] {
                    std::fs::create_dir_all(dir).map_err(io("creating the role's work folder"))?;
                }
                std::fs::set_permissions(
                    &scratch,
                    std::os::unix::fs::PermissionsExt::from_mode(0o1777),
                )
                .map_err(io("the role's /tmp"))?;
                let spec = SandboxSpec {
                    root: merged.clone(),
                    scratch: scratch.clone(),
                    kernel_version: kernel.clone(),
                    overlay: Some(Overlay {
                        lowers: trees.iter().rev().cloned().collect(),
                        upper: upper.clone(),
                        work: overlay_work.clone(),
                    }),
                };
                let overlay = if overlay_wanted() {
                    match ChrootTarget::start_spec(&settings.exe, &spec) {
                        Ok(target) => Some(target),
                        Err(e) if e.to_string().contains("overlay") => {
                            reporter.event(&Event::Note {
                                message: format!("overlayfs cannot be mounted here ({e}); {role} runs in a copy and its changes are found by comparing snapshots"),
                            });
                            None
                        }
                        Err(e) => return Err(BuildError::Sandbox(e.to_string())),
                    }
                } else {
                    None
                };
                // Without overlayfs: a plain copy of the stack, compared before and after.
                let plain = work.path().join("plain");
                let (target, snapshot) = match overlay {
                    Some(target) => (target, None),
                    None => {
                        let below = ImageSpec {
                            layers: layers.clone(),
                            labels: BTreeMap::new(),
                            epoch: settings.epoch,
                        };
                        write_rootfs(&plain, &blobs, &below)?;
                        let snapshot = crate::snapshot::Snapshot::take(&plain)
                            .map_err(io("taking a snapshot of the rootfs"))?;
                        let spec = SandboxSpec {
                            root: plain.clone(),
                            overlay: None,
                            ..spec
                        };
                        let target = ChrootTarget::start_spec(&settings.exe, &spec)
                            .map_err(|e| BuildError::Sandbox(e.to_string()))?;
                        (target, Some(snapshot))
                    }
                };
                if !facts_checked {
                    engine::facts_check::check(engine::target::Target::fs(&target), &plan.facts)
                        .map_err(BuildError::Facts)?;
                    facts_checked = true;
                }
                let ran = executor.run_role(role, &target);
                target.stop();
                ran.map_err(BuildError::Task)?;
                if let Some(snapshot) = snapshot {
                    snapshot
                        .diff_into(&plain, &upper)
                        .map_err(io(format!("finding what {role} changed")))?;
                }
                let blob = blobs
                    .write_layer(&upper, Source::OverlayUpper, settings.epoch, settings.codec)
                    .map_err(io(format!("writing the {role} layer")))?;
                let entry = Entry {
                    blob,
                    tree: PathBuf::new(),
                    registered: executor.registered(),
                    inputs: inputs.clone(),
                    seconds: role_started.elapsed().as_secs_f64(),
                };
                let stored = cache
                    .put(&upper, &entry)
                    .map_err(io("storing the layer in the cache"))?;
                reporter.event(&Event::Layer {
                    role: role.clone(),
                    digest: stored.blob.digest.clone(),
                    size: stored.blob.size,
                    cached: false,
                    why: why.clone(),
                });
                reports.push(LayerReport {
                    role: role.clone(),
                    digest: stored.blob.digest.clone(),
                    size: stored.blob.size,
                    diff_id: stored.blob.diff_id.clone(),
                    cached: false,
                    seconds: role_started.elapsed().as_secs_f64(),
                    why,
                });
                stored
            }
        };
        cache
            .set_last(&plan.image, role, &inputs)
            .map_err(io("recording the build"))?;
        layers.push((entry.blob.clone(), format!("imgbuild role {role}")));
        trees.push(entry.tree.clone());
    }
    let mut spec = ImageSpec {
        layers,
        labels: labels(plan, &settings.project_root, settings.epoch),
        epoch: settings.epoch,
    };
    let (oci_dir, archive, rootfs) = oci::output_paths(&settings.out, &plan.image);
    let image_dir = settings.out.join(&plan.image);
    std::fs::create_dir_all(&image_dir).map_err(io(format!("creating {}", image_dir.display())))?;
    let staged_rootfs = image_dir.join(format!(".rootfs-{}", std::process::id()));
    let mut staged = false;
    if settings.squash {
        write_rootfs(&staged_rootfs, &blobs, &spec)?;
        staged = true;
        let blob = blobs
            .write_layer(&staged_rootfs, Source::Tree, settings.epoch, settings.codec)
            .map_err(io("writing the squashed layer"))?;
        let roles = plan.roles.join(", ");
        spec.layers = vec![(blob, format!("imgbuild squashed: base, {roles}"))];
        trees = vec![staged_rootfs.clone()];
    }
    let written =
        oci::write_image(&blobs, &spec).map_err(io("writing the image config and manifest"))?;
    let intent = &plan.intent;
    let expect = verify::Expect {
        kernel: intent.kernel.clone(),
        mofed: intent.mofed.clone(),
        nvidia: intent.nvidia.clone(),
        initramfs: intent.initramfs,
        allow_opensm: intent.allow_opensm,
    };
    // An image with the same manifest was verified before with the same expectations: its
    // report stands (verify reads files only, and the manifest fixes every byte).
    let verify_cache = crate::freshness::VerifyCache::new(&settings.cache_dir);
    let earlier = settings
        .verify
        .then(|| verify_cache.get(&written.manifest, &expect))
        .flatten();
    if !staged && (settings.formats.chroot || (settings.verify && earlier.is_none())) {
        write_rootfs(&staged_rootfs, &blobs, &spec)?;
    }
    let verified = match earlier {
        Some(report) => Some(report),
        None if settings.verify => {
            let report = verify::verify_dir(&staged_rootfs, &plan.image, &expect)
                .map_err(io("reading the image to verify it"))?;
            verify_cache
                .put(&written.manifest, &expect, &report)
                .map_err(io("keeping the verify report"))?;
            Some(report)
        }
        None => None,
    };
    let pairs: Vec<(String, PathBuf)> = spec
        .layers
        .iter()
        .map(|(l, _)| l.digest.clone())
        .zip(trees.iter().cloned())
        .collect();
    let interim = BuildReport {
        image: plan.image.clone(),
        manifest: written.manifest.clone(),
        config: written.config.clone(),
        layers: reports.clone(),
        outputs: Vec::new(),
        seconds: started.elapsed().as_secs_f64(),
        verify: verified.clone(),
    };
    let report = crate::report::assemble(
        &interim,
        &pairs,
        intent.kernel.clone(),
        intent.mofed.clone(),
        intent.nvidia.clone(),
        verified.clone(),
    );
    crate::report::write(&image_dir, &report).map_err(io("writing the build report"))?;
    if let Some(failed) = verified.as_ref().filter(|v| !v.ok) {
        let _ = std::fs::remove_dir_all(&staged_rootfs);
        let lines: Vec<String> = failed
            .checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("  {}: {}", c.id, c.detail))
            .collect();
        return Err(BuildError::Verify(format!(
            "{}\n  (report: {})",
            lines.join("\n"),
            image_dir.join("report.md").display()
        )));
    }

    let mut outputs = Vec::new();
    let current = |output: &Path, identity: &Path| {
        crate::freshness::output_current(&image_dir, output, identity, &written.manifest)
    };
    let record = |output: &Path, identity: &Path| {
        crate::freshness::record_output(&image_dir, output, identity, &written.manifest)
            .map_err(io("recording the outputs"))
    };
    if settings.formats.oci {
        let index = oci_dir.join("index.json");
        if !current(&oci_dir, &index) {
            oci::write_oci_layout(&oci_dir, &blobs, &spec, &written, "latest")
                .map_err(io(format!("writing {}", oci_dir.display())))?;
            record(&oci_dir, &index)?;
        }
        outputs.push(oci_dir);
    }
    if settings.formats.docker_archive {
        if !oci::archive_path_ok(&archive) {
            return Err(BuildError::Facts(format!("{}: a docker-archive path must not contain ':' (Warewulf reads it as file://); choose another --out", archive.display())));
        }
        if !current(&archive, &archive) {
            oci::write_docker_archive(
                &archive,
                &blobs,
                &spec,
                &written,
                &format!("{}:latest", plan.image),
            )
            .map_err(io(format!("writing {}", archive.display())))?;
            record(&archive, &archive)?;
        }
        outputs.push(archive);
    }
    if settings.formats.chroot {
        oci::replace(&staged_rootfs, &rootfs)
            .map_err(io(format!("writing {}", rootfs.display())))?;
        outputs.push(rootfs);
    } else {
        let _ = std::fs::remove_dir_all(&staged_rootfs);
    }
    Ok(BuildReport {
        image: plan.image.clone(),
        manifest: written.manifest,
        config: written.config,
        layers: reports,
        outputs,
        seconds: started.elapsed().as_secs_f64(),
        verify: verified,
    })
}

/// Whether roles run on an overlay (`IMGBUILD_NO_OVERLAY=1` forces the snapshot fallback).
fn overlay_wanted() -> bool {
    std::env::var_os("IMGBUILD_NO_OVERLAY").is_none_or(|v| v.is_empty() || v == "0")
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
            whiteouts: true,
            ..engine::archive::Limits::default()
        };
        engine::archive::extract_tar(reader, &fs, Path::new("/"), limits)
            .map_err(|e| BuildError::Facts(format!("applying layer {}: {e}", layer.digest)))?;
    }
    let kept = tmp.keep();
    std::fs::set_permissions(&kept, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .map_err(io("the rootfs folder"))?;
    oci::replace(&kept, dest).map_err(io(format!("writing {}", dest.display())))
}
