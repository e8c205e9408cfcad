//! Building an image, as its steps: the base; one layer per role, reused from the cache when
//! nothing it depends on changed, otherwise run in an overlay sandbox (`role_layer`); the image
//! config and manifest, verify and the report (`finish`); the outputs (`outputs`).

mod archive_stream;
mod compile_bundle;
pub mod cpu_share;
mod error;
mod files;
mod finish;
mod keys;
pub(crate) mod outcome;
mod outputs;
mod pending;
pub mod provenance;
mod queue;
mod role_layer;
mod room;
mod rootfs;
mod sbom;
mod settings;
mod stack;
mod stages;
pub use error::BuildError;
pub use outcome::{BuildOnlyRemoval, BuildReport, LayerReport};
pub use room::{free_bytes, gigabytes};
pub use rootfs::write_rootfs;
pub use settings::{Formats, Settings};
pub use stages::{stages, Stage};

use std::time::Instant;

use engine::events::{Event, Reporter};
use engine::executor::{ExecOptions, Executor};
use engine::modules::Downloader;
use planner::Plan;

use crate::base::{self, BaseRequest};
use crate::cache::remote::RegistryCache;
use crate::cache::remote_builds::BuildUse;
use stack::{Stack, Stores};

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
        policy: settings.signature_policy.as_deref(),
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
        diff_ids: base_layers.iter().map(|b| b.blob.diff_id.clone()).collect(),
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
                compiles: Default::default(),
                inputs: None,
            })
            .collect(),
    })
}

/// Says when the module-signing secret is given but no role of the recipe gets it.
fn warn_of_unused_signing(settings: &Settings, signing_roles: &[String], reporter: &dyn Reporter) {
    if settings.module_signing.is_some() && signing_roles.is_empty() {
        reporter.event(&Event::Note {
            message: format!("warning: --secret id=module-signing is given but no role of this recipe gets it: list the roles that build kernel modules in {} (default: {})", crate::signing::ROLES_VAR, crate::signing::DEFAULT_ROLES.join(", ")),
        });
    }
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
    let cache_use = BuildUse::begin(&settings.remote, &plan.image, reporter);
    let step = |what: String| reporter.event(&Event::Step { what });
    let request = BaseRequest::from_vars(&plan.vars)?;
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
        signing_roles: match settings.module_signing {
            Some(_) => crate::signing::signing_roles(plan),
            None => Vec::new(),
        },
        queue: Default::default(),
        archive_to: outputs::streamed_archive(plan, settings),
        archive: None,
    };
    warn_of_unused_signing(settings, &roles.signing_roles, reporter);
    for role in &plan.roles {
        roles.add_layer(role, &mut stack)?;
    }
    let roles_done = Instant::now();
    roles.settle(&mut stack)?;
    let archive = roles.archive.take();
    let build_only = BuildOnlyRemoval::from_registered(&roles.executor.registered());
    step("the image: config and manifest".into());
    let image = finish::image(plan, settings, &stores.blobs, &mut stack)?;
    if settings.verify {
        step("verify: reading the image's layers and checking it".into());
    }
    let (verified, files) = finish::verify(plan, settings, &stores.blobs, &image)?;
    let made = finish::Made {
        image: &image,
        stack: &stack,
        verified: verified.as_ref(),
        build_only: build_only.as_ref(),
    };
    finish::report(plan, &made, started)?;
    step(format!("writing the outputs to {}", image.dir.display()));
    let outputs = outputs::write(plan, settings, &stores.blobs, &image, (files, archive))?;
    if let Some(cache_use) = cache_use {
        cache_use.end(true);
    }
    Ok(BuildReport {
        image: plan.image.clone(),
        manifest: image.written.manifest.clone(),
        config: image.written.config.clone(),
        layers: stack.reports,
        outputs,
        seconds: started.elapsed().as_secs_f64(),
        after_roles: roles_done.elapsed().as_secs_f64(),
        verify: verified,
        build_only,
    })
}
