//! Step 2: one layer per role. A role whose inputs (the stack below, its resolved tasks and
//! handlers, its files, its download pins, what earlier roles registered) are in the cache is
//! reused; otherwise it runs in a sandbox on an overlay of the stack (or, where overlayfs cannot
//! be mounted, on a copy compared before and after), and its changes become the layer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use engine::compile_cache::{CompileLog, CompileStats};
use engine::events::{Event, Reporter};
use engine::executor::Executor;
use engine::package_cache::PackageCache;
use engine::sandbox::{ChrootTarget, Overlay, SandboxSpec};
use modules::target::TargetError;
use planner::plan::Step;
use planner::Plan;

use super::archive_stream::{self, ArchiveStream};
use super::cpu_share::CpuShares;
use super::error::{io, BuildError};
use super::keys::{role_inputs, role_of, steps_of};
use super::outcome::LayerReport;
use super::pending::{Finished, PendingLayer, RoleLayer};
use super::queue::{LayerQueue, Ready, Taken, Wait};
use super::rootfs::write_rootfs;
use super::settings::Settings;
use super::stack::{Stack, Stores};
use crate::blobs::LayerBlob;
use crate::cache::remote::{self, RegistryCache};
use crate::cache::{Entry, Inputs, Lookup};
use crate::hashing::digest_of;
use crate::layer::Source;
use crate::oci::ImageSpec;

/// What every role's layer needs.
pub(super) struct Roles<'a> {
    pub plan: &'a Plan,
    pub settings: &'a Settings,
    pub stores: &'a Stores,
    pub reporter: &'a dyn Reporter,
    pub pin: &'a dyn Fn(&str) -> Option<String>,
    pub executor: Executor<'a>,
    /// The base's facts are checked once, in the first role that runs.
    pub facts_checked: bool,
    /// A role with a `no_log` task was met: what it and later roles registered may hold what
    /// no_log hides, so from it on nothing is shared through the registry cache.
    pub secret_seen: bool,
    /// The roles given the module-signing secret (none without one).
    pub signing_roles: Vec<String>,
    /// The layers between their roles and the image: blobs being written while later roles
    /// run, and the layers behind them.
    pub queue: LayerQueue,
    /// Where the docker-archive is written while the roles run, when it is an output of one
    /// layer per role.
    pub archive_to: Option<PathBuf>,
    /// The docker-archive being written, from the first role that runs on.
    pub archive: Option<ArchiveStream>,
}

/// At most this many layers' blobs are written at once while later roles run: a short role
/// after a big layer (openibd after nvidia) does not wait for that layer's blob.
const WRITING_AT_ONCE: usize = 2;

/// Whether roles run on an overlay (`IMGBUILD_NO_OVERLAY=1` forces the snapshot fallback).
fn overlay_wanted() -> bool {
    std::env::var_os("IMGBUILD_NO_OVERLAY").is_none_or(|v| v.is_empty() || v == "0")
}

/// A role's work folders: the overlay's upper, work and merged folders and its `/tmp`.
struct WorkDirs {
    upper: PathBuf,
    overlay_work: PathBuf,
    merged: PathBuf,
    scratch: PathBuf,
    /// The building machine's own files for the role's sandbox (see `SandboxSpec::host_work`).
    host: PathBuf,
    plain: PathBuf,
    /// The shared package download cache's folders for this role's sandbox.
    package_cache: Option<PackageCache>,
}

impl WorkDirs {
    fn create(root: &Path, package_pool: &Path) -> Result<WorkDirs, BuildError> {
        // Best effort, as the cache is: without it apt downloads as it always did.
        let package_cache = PackageCache::new(package_pool, root).ok();
        let dirs = WorkDirs {
            package_cache,
            upper: root.join("upper"),
            overlay_work: root.join("work"),
            merged: root.join("merged"),
            scratch: root.join("tmp"),
            host: root.join("host"),
            plain: root.join("plain"),
        };
        for dir in [
            &dirs.upper,
            &dirs.overlay_work,
            &dirs.merged,
            &dirs.scratch,
            &dirs.host,
        ] {
            std::fs::create_dir_all(dir).map_err(io("creating the role's work folder"))?;
        }
        std::fs::set_permissions(
            &dirs.scratch,
            std::os::unix::fs::PermissionsExt::from_mode(0o1777),
        )
        .map_err(io("the role's /tmp"))?;
        Ok(dirs)
    }
}

impl Roles<'_> {
    /// Adds `role`'s layer to `stack`: from the cache, or by running the role. Its folder and
    /// diff_id (what the next role needs) come at once; a layer the role made is written on a
    /// thread while later roles run, and its blob enters `stack` when written, after those
    /// below it ([`Roles::settle`] waits for all).
    pub fn add_layer(&mut self, role: &str, stack: &mut Stack) -> Result<(), BuildError> {
        self.settle_until(stack, Wait::Never)?;
        let started = Instant::now();
        let (steps, inputs) = self.inputs_of(role, stack);
        let making = self.wait_for_other_builds(role, &inputs)?;
        let lookup = match self.settings.no_cache {
            true => Lookup::Miss,
            false => self.stores.cache.lookup(&inputs),
        };
        let layer = |why: Vec<String>| RoleLayer {
            role: role.to_owned(),
            steps: steps.clone(),
            why,
            started,
        };
        let (entry, from_registry) = match lookup {
            Lookup::Hit(entry) => (self.reuse(role, *entry)?, false),
            Lookup::Miss => match self.take_from_registry(role, &inputs)? {
                Some(entry) => (entry, true),
                None => {
                    let why = self.why_rebuilt(role, &inputs);
                    return self.run(layer(why), making, &inputs, stack);
                }
            },
            Lookup::Dropped(damage) => {
                let why = format!("the cached layer was damaged ({damage}), so it was dropped");
                self.reporter.event(&Event::Note {
                    message: format!("warning: role {role}: {why}; running the role again"),
                });
                return self.run(layer(vec![why]), making, &inputs, stack);
            }
        };
        stack.trees.push(entry.tree.clone());
        stack.diff_ids.push(entry.blob.diff_id.clone());
        self.queue.push_ready(Ready {
            layer: layer(Vec::new()),
            entry,
            taken: Taken {
                cached: true,
                from_registry,
            },
            seconds: started.elapsed().as_secs_f64(),
        });
        self.settle_until(stack, Wait::Never)?;
        self.set_last(role, &inputs)
    }

    /// Waits for every layer being written and adds them to `stack`, in order.
    pub fn settle(&mut self, stack: &mut Stack) -> Result<(), BuildError> {
        self.settle_until(stack, Wait::All)
    }

    /// Adds to `stack` the layers that may enter it, waiting for blobs as `wait` says.
    fn settle_until(&mut self, stack: &mut Stack, wait: Wait) -> Result<(), BuildError> {
        while let Some(ready) = self.queue.next(wait) {
            self.add_written(ready?, stack);
        }
        Ok(())
    }

    /// Adds a layer whose blob is written to `stack`: shares it, says so, reports it.
    fn add_written(&mut self, ready: Ready, stack: &mut Stack) {
        let Ready {
            layer,
            entry,
            taken,
            seconds,
        } = ready;
        let RoleLayer {
            role, steps, why, ..
        } = layer;
        self.share(&role, &steps, &entry, taken.from_registry);
        self.reporter.event(&Event::Layer {
            role: role.clone(),
            digest: entry.blob.digest.clone(),
            size: entry.blob.size,
            cached: taken.cached,
            why: why.clone(),
            registry: taken
                .from_registry
                .then(|| self.settings.remote.source_name()),
        });
        stack.reports.push(LayerReport {
            role: role.clone(),
            digest: entry.blob.digest.clone(),
            size: entry.blob.size,
            unpacked: entry.blob.diff_size,
            diff_id: entry.blob.diff_id.clone(),
            cached: taken.cached,
            from_registry: taken.from_registry,
            seconds,
            why,
            built_at: entry.built_at,
            built_seconds: entry.seconds,
            costs: entry.costs.clone(),
            compiles: entry.compiles,
            inputs: Some(entry.inputs.clone()),
        });
        self.archive_layer(&entry.blob);
        stack
            .layers
            .push((entry.blob.clone(), format!("imgbuild role {role}")));
    }

    /// Starts writing the docker-archive (when it is wanted, not started, and its disk has room
    /// to spare), with the layers in the image so far. One that does not start is written after
    /// verify, as it would be.
    fn start_archive(&mut self, stack: &Stack) {
        let Some(dest) = self.archive_to.as_ref().filter(|_| self.archive.is_none()) else {
            return;
        };
        let so_far = stack.layers.iter().map(|(blob, _)| blob.diff_size).sum();
        if !archive_stream::room_for(dest, so_far, archive_stream::KEPT_FOR_THE_ROLES) {
            return;
        }
        self.archive = ArchiveStream::start(dest, self.settings.epoch).ok();
        for (blob, _) in &stack.layers {
            self.archive_layer(blob);
        }
    }

    /// Appends a layer that enters the image to the docker-archive being written, if one is.
    fn archive_layer(&mut self, blob: &LayerBlob) {
        let Some(archive) = self.archive.as_mut() else {
            return;
        };
        match self.stores.blobs.path(&blob.digest) {
            Ok(path) => archive.push(blob, path),
            // Not streamed then: the archive is written in one go after verify.
            Err(_) => self.archive = None,
        }
    }

    /// Records that this image's last build of `role` used `inputs`.
    fn set_last(&self, role: &str, inputs: &Inputs) -> Result<(), BuildError> {
        self.stores
            .cache
            .set_last(&self.plan.image, role, inputs)
            .map_err(io("recording the build"))
    }

    /// The steps of `role` and the inputs its layer is keyed by, over the layers of `stack`.
    fn inputs_of(&self, role: &str, stack: &Stack) -> (Vec<Step>, Inputs) {
        let steps = steps_of(self.plan, role);
        // The whole stack below, not only the layer under this one: two different stacks can
        // end in layers with the same digest. The diff_ids, not the blobs' digests: a layer's
        // diff_id is known while its blob is still being written, and the roles above do not
        // depend on how the layers below are compressed.
        let parent = digest_of(stack.diff_ids.join("\n").as_bytes());
        let mut inputs = role_inputs(
            self.plan,
            &steps,
            &parent,
            &self.settings.project_root,
            &self.executor.registered(),
            self.pin,
        );
        inputs.signer = self.signing_for(role).map(|s| s.fingerprint());
        (steps, inputs)
    }

    /// The module-signing secret when `role` gets it.
    fn signing_for(&self, role: &str) -> Option<Arc<crate::signing::ModuleSigning>> {
        let signing = self.settings.module_signing.clone()?;
        self.signing_roles
            .iter()
            .any(|r| r == role)
            .then_some(signing)
    }

    pub(super) fn registry_cache(&self) -> RegistryCache<'_> {
        RegistryCache {
            remote: &self.settings.remote,
            reporter: self.reporter,
        }
    }

    /// The role's layer from the registry cache (`--cache-from`) when it has the key: stored
    /// in the local cache, as if built here.
    fn take_from_registry(
        &mut self,
        role: &str,
        inputs: &Inputs,
    ) -> Result<Option<Entry>, BuildError> {
        if self.settings.no_cache || !self.settings.remote.reads() {
            return Ok(None);
        }
        let work = self
            .stores
            .cache
            .work_dir()
            .map_err(io("creating the role's work folder"))?;
        let tree = work.path().join("tree");
        let tag = remote::role_tag(inputs);
        let what = format!("role {role}");
        let taken = self.registry_cache().take(
            &what,
            &tag,
            &self.stores.blobs,
            &tree,
            engine::archive::Whiteouts::Overlay,
        );
        let Some(remote::Record {
            blob,
            role: Some(made),
            ..
        }) = taken
        else {
            return Ok(None);
        };
        self.executor.restore_registered(&made.registered);
        self.executor
            .restore_initramfs_pending(made.initramfs_pending.clone());
        let entry = Entry {
            blob,
            tree: PathBuf::new(),
            registered: made.registered,
            inputs: inputs.clone(),
            seconds: made.seconds,
            built_at: made.built_at,
            costs: Vec::new(),
            initramfs_pending: made.initramfs_pending,
            compiles: Default::default(),
        };
        let stored = self
            .stores
            .cache
            .put(&tree, &entry)
            .map_err(io("storing the layer in the cache"))?;
        Ok(Some(stored))
    }

    /// Shares the role's layer through the registry cache (`--cache-to`) unless it came from
    /// there, or the role or one before it has a `no_log` task or handler.
    fn share(&mut self, role: &str, steps: &[Step], entry: &Entry, from_registry: bool) {
        let handlers = self.plan.handlers.iter().filter(|h| role_of(h) == role);
        let hides = steps
            .iter()
            .chain(handlers)
            .flat_map(Step::tasks)
            .any(|t| t.no_log);
        let writes = self.settings.remote.writes();
        if writes && hides && !self.secret_seen {
            self.reporter.event(&Event::Note {
                message: format!("role {role} has no_log tasks: neither its layer nor those after it are shared through the registry cache (what they register could hold what no_log hides)"),
            });
        }
        self.secret_seen |= hides;
        if !writes || from_registry || self.secret_seen {
            return;
        }
        let record = remote::Record {
            tag: remote::role_tag(&entry.inputs),
            blob: entry.blob.clone(),
            created_by: format!("imgbuild role {role}"),
            role: Some(remote::RoleRecord {
                inputs: entry.inputs.clone(),
                registered: entry.registered.clone(),
                seconds: entry.seconds,
                built_at: entry.built_at,
                initramfs_pending: entry.initramfs_pending.clone(),
            }),
        };
        self.registry_cache()
            .share(&format!("role {role}"), &record, &self.stores.blobs);
    }

    /// A cached layer: what the role registered comes back, and the blob is recompressed when
    /// this build asks for another compression.
    fn reuse(&mut self, role: &str, mut entry: Entry) -> Result<Entry, BuildError> {
        self.executor.restore_registered(&entry.registered);
        self.executor
            .restore_initramfs_pending(entry.initramfs_pending.clone());
        if entry.blob.compression != self.settings.codec.compression {
            entry.blob = self
                .stores
                .blobs
                .write_layer(
                    &entry.tree,
                    Source::OverlayUpper,
                    self.settings.epoch,
                    self.settings.codec,
                )
                .map_err(io(format!("recompressing the {role} layer")))?;
        }
        Ok(entry)
    }

    /// Why the role runs again: what changed since its last build, or `--no-cache`.
    fn why_rebuilt(&self, role: &str, inputs: &Inputs) -> Vec<String> {
        match self.stores.cache.last(&self.plan.image, role) {
            Some(_) if self.settings.no_cache => vec!["--no-cache".to_owned()],
            Some(last) => inputs.changes_since(&last),
            None => Vec::new(),
        }
    }

    /// Runs the role in a sandbox; its changes become its layer, placed in the cache and written
    /// while later roles run (at most [`WRITING_AT_ONCE`] at a time).
    fn run(
        &mut self,
        layer: RoleLayer,
        making: std::fs::File,
        inputs: &Inputs,
        stack: &mut Stack,
    ) -> Result<(), BuildError> {
        let role = layer.role.clone();
        let work = self
            .stores
            .cache
            .work_dir()
            .map_err(io("creating the role's work folder"))?;
        let dirs = WorkDirs::create(work.path(), &self.settings.package_pool())?;
        let compiles_taken = self.take_compiles(&role)?;
        self.start_archive(stack);
        // With other images' roles running beside it, the sandbox runs on its share of cores.
        let shares = self.settings.cpu_shares.clone();
        let share = shares.as_deref().map(CpuShares::enter);
        let (target, snapshot) = match &share {
            Some(share) => share.start(|| self.start_target(&role, &dirs, stack))?,
            None => self.start_target(&role, &dirs, stack)?,
        };
        let (costs, compiles) = self.run_in(&role, &target)?;
        self.share_compiles(&role, &layer.steps, &compiles, compiles_taken);
        drop(share);
        if let Some(snapshot) = snapshot {
            snapshot
                .diff_into(&dirs.plain, &dirs.upper)
                .map_err(io(format!("finding what {role} changed")))?;
        }
        let entry = Entry {
            blob: LayerBlob::default(),
            tree: PathBuf::new(),
            registered: self.executor.registered(),
            inputs: inputs.clone(),
            seconds: layer.started.elapsed().as_secs_f64(),
            built_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            costs,
            initramfs_pending: self.executor.initramfs_pending(),
            compiles: compiles.stats,
        };
        let made = Finished {
            layer,
            upper: dirs.upper.clone(),
            entry,
            making,
        };
        self.settle_until(stack, Wait::UntilWriting(WRITING_AT_ONCE - 1))?;
        let (pending, tree, diff_id) = PendingLayer::start(made, self.stores, self.settings)?;
        self.queue.push_writing(pending);
        stack.trees.push(tree);
        stack.diff_ids.push(diff_id);
        self.set_last(&role, inputs)
    }

    /// Runs the role's tasks in `target`, with the module-signing secret when it gets it, and
    /// stops the sandbox; returns what each task cost and what its compiles found in the
    /// compile cache.
    fn run_in(
        &mut self,
        role: &str,
        target: &ChrootTarget,
    ) -> Result<(Vec<engine::costs::TaskCost>, CompileLog), BuildError> {
        if !self.facts_checked {
            engine::facts_check::check(engine::target::Target::fs(target), &self.plan.facts)
                .map_err(BuildError::Facts)?;
            self.facts_checked = true;
        }
        let fs = engine::target::Target::fs(target);
        let signing = self.signing_for(role);
        if let Some(signing) = &signing {
            signing.install(role, fs).map_err(BuildError::Signing)?;
        }
        let ran = self.executor.run_role(role, target);
        let compiles = target.compile_log();
        self.report_compiles(role, compiles.stats);
        if signing.is_some() {
            crate::signing::ModuleSigning::remove(role, fs).map_err(BuildError::Signing)?;
        }
        target.stop();
        Ok((ran.map_err(BuildError::Task)?.costs, compiles))
    }

    /// Says how many of the role's compiles the compile cache served.
    fn report_compiles(&self, role: &str, stats: CompileStats) {
        let compiles = stats.hits + stats.misses;
        if compiles == 0 {
            return;
        }
        let damaged = match stats.damaged {
            0 => String::new(),
            n => format!("; {n} damaged entries found and compiled again"),
        };
        self.reporter.event(&Event::Note {
            message: format!(
                "role {role}: compile cache: {} of {compiles} compiles reused{damaged}",
                stats.hits
            ),
        });
    }

    /// Builds side by side (`--jobs`, or another process on this cache) that need the same layer
    /// make it once: the lock on its key is held until this build has stored or found it, and a
    /// build that has to wait says so, then finds the layer cached. A `--no-cache` build takes
    /// the lock too, so no build takes the folder it places for unfinished while its blob is
    /// written.
    fn wait_for_other_builds(
        &self,
        role: &str,
        inputs: &Inputs,
    ) -> Result<std::fs::File, BuildError> {
        let path = self
            .settings
            .cache_dir
            .join("locks")
            .join(format!("{}.lock", inputs.key()));
        let locking = io("locking the layer's cache entry");
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io("locking the layer's cache entry"))?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io("locking the layer's cache entry"))?;
        use rustix::fs::{flock, FlockOperation};
        if flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
            let then = match self.settings.no_cache {
                true => "waiting for it to be stored, then running the role again (--no-cache)",
                false => "waiting to take it from the cache",
            };
            self.reporter.event(&Event::Note {
                message: format!("role {role}: another build is making this layer; {then}"),
            });
            flock(&file, FlockOperation::LockExclusive).map_err(|e| locking(e.into()))?;
        }
        Ok(file)
    }

    /// The sandbox for a role: on an overlay of the stack, or on a copy of it (with a snapshot
    /// to compare against) where overlayfs cannot be mounted.
    fn start_target(
        &mut self,
        role: &str,
        dirs: &WorkDirs,
        stack: &mut Stack,
    ) -> Result<(ChrootTarget, Option<crate::snapshot::Snapshot>), BuildError> {
        let spec = SandboxSpec {
            root: dirs.merged.clone(),
            scratch: dirs.scratch.clone(),
            kernel_version: self.plan.intent.kernel.clone().unwrap_or_default(),
            overlay: Some(Overlay {
                lowers: stack.trees.iter().rev().cloned().collect(),
                upper: dirs.upper.clone(),
                work: dirs.overlay_work.clone(),
            }),
            package_cache: dirs.package_cache.clone(),
            compile_cache: self.settings.compile_cache(),
            host_work: Some(dirs.host.clone()),
        };
        if overlay_wanted() {
            match ChrootTarget::start_spec(&self.settings.exe, &spec) {
                Ok(target) => return Ok((target.with_output(self.reporter.output_sink()), None)),
                Err(e @ TargetError::NoOverlay(_)) => {
                    self.reporter.event(&Event::Note {
                        message: format!("overlayfs cannot be mounted here ({e}); {role} runs in a copy and its changes are found by comparing snapshots"),
                    });
                }
                Err(e) => return Err(BuildError::Sandbox(e.to_string())),
            }
        }
        // The copy is written from the blobs: the one still being written is waited for.
        self.settle(stack)?;
        let below = ImageSpec {
            layers: stack.layers.clone(),
            labels: BTreeMap::new(),
            epoch: self.settings.epoch,
        };
        write_rootfs(&dirs.plain, &self.stores.blobs, &below)?;
        let snapshot = crate::snapshot::Snapshot::take(&dirs.plain)
            .map_err(io("taking a snapshot of the rootfs"))?;
        let spec = SandboxSpec {
            root: dirs.plain.clone(),
            overlay: None,
            ..spec
        };
        let target = ChrootTarget::start_spec(&self.settings.exe, &spec)
            .map_err(|e| BuildError::Sandbox(e.to_string()))?
            .with_output(self.reporter.output_sink());
        Ok((target, Some(snapshot)))
    }
}
