//! `imgbuild build`: plan, base, layers, outputs.

use std::process::ExitCode;

use anyhow::{anyhow, Context};
use engine::events::Reporter;
use image::build::{BuildError, Formats, Settings};
use planner::{PlanOptions, Project};

use super::session::{
    cache_dir, describe_failure, downloads, reporter, save_lock, source_date_epoch,
};
use crate::cli::{BuildArgs, OutputFormat};
use crate::Failure;

fn failure(e: BuildError) -> Failure {
    match e {
        BuildError::Task(task) => Failure::Run(describe_failure(&task)),
        BuildError::Facts(message) => Failure::Run(anyhow!(message)),
        BuildError::Verify(message) => Failure::Run(anyhow!("{}", message)),
        other => Failure::Run(anyhow!(other)),
    }
}

/// Builds each image in turn.
pub fn run(
    project: &Project,
    args: &BuildArgs,
    opts: &PlanOptions,
    json: bool,
) -> Result<ExitCode, Failure> {
    let formats = Formats {
        oci: args.format.contains(&OutputFormat::Oci),
        docker_archive: args.format.contains(&OutputFormat::DockerArchive),
        chroot: args.format.contains(&OutputFormat::Chroot),
    };
    let push_to = args
        .push
        .as_deref()
        .map(|r| push_references(r, &args.images))
        .transpose()?;
    let plans = args
        .images
        .iter()
        .map(|image| planner::plan(project, image, opts))
        .collect::<Result<Vec<_>, _>>()?;
    let reporter: std::sync::Arc<dyn Reporter> = reporter(json).into();
    let (downloads, lock) = downloads(&project.root, args.locked, reporter.clone())?;
    let exe = std::env::current_exe()
        .context("finding the imgbuild binary")
        .map_err(Failure::Run)?;
    let out = if args.out.is_absolute() {
        args.out.clone()
    } else {
        std::env::current_dir().unwrap_or_default().join(&args.out)
    };
    let mut result = Ok(ExitCode::SUCCESS);
    for (i, plan) in plans.iter().enumerate() {
        super::print_warnings(&plan.warnings);
        let settings = Settings {
            project_root: project.root.clone(),
            out: out.clone(),
            formats,
            no_cache: args.no_cache,
            exe: exe.clone(),
            cache_dir: cache_dir(),
            epoch: source_date_epoch(&project.root, &plan.inputs)?,
            gzip_level: args.gzip_level,
            verify: !args.no_verify,
        };
        // An artifact not pinned yet is fetched (into the download cache) so that the layer key
        // holds its sha256: a changed file on the mirror then rebuilds the layer.
        let pin = |url: &str| -> Option<String> {
            if let Some(pinned) = lock.get(url) {
                return Some(pinned.sha256.clone());
            }
            if let Some(pinned) = downloads.0.lock().get(url) {
                return Some(pinned.sha256.clone());
            }
            downloads.0.fetch(url, None).ok()?;
            downloads.0.lock().get(url).map(|p| p.sha256.clone())
        };
        match image::build::build(plan, &settings, &downloads, reporter.as_ref(), &pin) {
            Ok(report) => {
                if json {
                    let layers: Vec<serde_json::Value> = report
                        .layers
                        .iter()
                        .map(|l| serde_json::json!({"role": l.role, "digest": l.digest, "size": l.size, "cached": l.cached, "seconds": l.seconds, "why": l.why}))
                        .collect();
                    println!(
                        "{}",
                        serde_json::json!({"event": "built", "image": report.image, "manifest": report.manifest, "config": report.config, "layers": layers, "outputs": report.outputs, "seconds": report.seconds, "verify": report.verify})
                    );
                } else {
                    println!(
                        "{}: {} ({:.1}s)",
                        report.image, report.manifest, report.seconds
                    );
                    for output in &report.outputs {
                        println!("  {}", output.display());
                    }
                }
                if let Some(reference) = push_to.as_ref().and_then(|refs| refs.get(i)) {
                    if let Err(e) = push(reference, &report.manifest) {
                        result = Err(e);
                        break;
                    }
                }
            }
            Err(e) => {
                result = Err(failure(e));
                break;
            }
        }
    }
    save_lock(&project.root, &downloads, &lock)?;
    result
}

/// The reference each image is pushed to: `REF` for one image; with several, `REF` must hold
/// `{image}`, replaced by each image's name.
fn push_references(
    reference: &str,
    images: &[String],
) -> Result<Vec<registry::Reference>, Failure> {
    if images.len() > 1 && !reference.contains("{image}") {
        return Err(Failure::Input(anyhow!(
            "--push {reference}: several images would go to one reference; put {{image}} in it (for example docker://registry/site/{{image}}:latest)"
        )));
    }
    images
        .iter()
        .map(|image| {
            registry::Reference::parse(&reference.replace("{image}", image))
                .map_err(|e| Failure::Input(anyhow!("--push: {e}")))
        })
        .collect()
}

/// Pushes a built image (its blobs are in the blob cache) to `reference`.
fn push(reference: &registry::Reference, manifest_digest: &str) -> Result<(), Failure> {
    let blobs = image::blobs::BlobStore::new(&cache_dir().join("blobs"))
        .context("opening the blob cache")
        .map_err(Failure::Run)?;
    let manifest = std::fs::read(blobs.path(manifest_digest))
        .context("reading the built manifest")
        .map_err(Failure::Run)?;
    let parsed: serde_json::Value = serde_json::from_slice(&manifest)
        .context("reading the built manifest")
        .map_err(Failure::Run)?;
    let digests = std::iter::once(&parsed["config"])
        .chain(parsed["layers"].as_array().into_iter().flatten())
        .filter_map(|d| d["digest"].as_str());
    let to_push: Vec<registry::PushBlob> = digests
        .map(|digest| registry::PushBlob {
            digest: digest.to_owned(),
            path: blobs.path(digest),
        })
        .collect();
    let credentials = registry::Credentials::for_registry(&reference.registry)
        .map_err(|e| Failure::Input(anyhow!(e)))?;
    let pushed = registry::push(
        reference,
        credentials,
        &to_push,
        &manifest,
        image::oci::MANIFEST,
    )
    .map_err(|e| Failure::Run(anyhow!("pushing to {reference}: {e}")))?;
    eprintln!(
        "pushed {reference}@{} ({} blobs uploaded, {} already there)",
        pushed.digest, pushed.uploaded, pushed.skipped
    );
    Ok(())
}
