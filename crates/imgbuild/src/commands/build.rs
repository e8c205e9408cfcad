//! `imgbuild build`: plan, base, layers, outputs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{anyhow, Context};
use engine::events::Reporter;
use image::build::{BuildError, Formats, Settings};
use image::compression::{Codec, Compression};
use planner::{PlanOptions, Project};

use super::session::{
    cache_dir, cache_limit, collect_cache, describe_failure, downloads, save_lock,
    source_date_epoch, MirrorDownloads,
};
use crate::cli::{BuildArgs, LayerCompression, OutputFormat};
use crate::progress::ForImage;
use crate::Failure;

fn failure(e: BuildError) -> Failure {
    match e {
        BuildError::Task(task) => {
            let described = describe_failure(&task);
            let text = format!("{described:#}");
            if text.contains("No space left on device") {
                Failure::Run(anyhow!("{text}\n{}", disk_full_hint()))
            } else {
                Failure::Run(described)
            }
        }
        BuildError::Io { what, cause } if cause.kind() == std::io::ErrorKind::StorageFull => {
            Failure::Run(anyhow!("{what}: {cause}. {}", disk_full_hint()))
        }
        BuildError::Facts(message) => Failure::Run(anyhow!(message)),
        BuildError::Verify(message) => Failure::Run(anyhow!("{}", message)),
        // An output asked for where it cannot be written: bad input.
        BuildError::Output(message) => Failure::Input(anyhow!(message)),
        // The recipe asks for a base that cannot be: bad input.
        BuildError::Base(image::base::BaseError::Unsupported(message)) => {
            Failure::Input(anyhow!(message))
        }
        other => Failure::Run(anyhow!(other)),
    }
}

/// What to do when a disk filled up: where the cache is and how much it has free. What the
/// step was writing is removed (temporary files, the role's work folder), so no cache entry is
/// half-written.
fn disk_full_hint() -> String {
    let cache = cache_dir();
    let free = image::build::free_bytes(&cache)
        .map_or_else(|| "unknown space".to_owned(), image::build::gigabytes);
    format!(
        "The disk filled up: the cache {} has {free} free. Free space (`imgbuild cache gc --max SIZE` removes the least recently used layers) or set IMGBUILD_CACHE to a larger filesystem, then build again; nothing half-written was kept",
        cache.display()
    )
}

/// Builds the images, `--jobs` at a time.
pub fn run(
    project: &Project,
    args: &BuildArgs,
    opts: &PlanOptions,
    json: bool,
) -> Result<ExitCode, Failure> {
    let since = std::time::SystemTime::now();
    let config = mirror::MirrorConfig::load(&project.root.join("mirror.toml"))
        .map_err(|e| Failure::Input(anyhow!(e)))?;
    let (settings, args) = super::site::settings_for(&project.root, args)?;
    let args = &args;
    let Trust {
        signing,
        image_signer,
        signature_policy,
    } = trust(project, args, &config)?;
    let opts = &with_signing_vars(opts, signing.is_some());
    let cache_limit = cache_limit(settings.cache_max.value)?;
    let formats = formats_of(args);
    check_warewulf(args, formats)?;
    let push_to = args
        .push
        .as_deref()
        .map(|r| push_references(r, &args.images))
        .transpose()?;
    let remote = super::site::registry_cache(&settings)?;
    let plans = args
        .images
        .iter()
        .map(|image| planner::plan(project, image, opts))
        .collect::<Result<Vec<_>, _>>()?;
    // Lines name their image when several build at once.
    let several = args.jobs > 1 && plans.len() > 1;
    let display = crate::progress::display(json, several);
    let shared: std::sync::Arc<dyn Reporter> =
        std::sync::Arc::new(ForImage::new(display.clone(), None, &[]));
    let (downloads, lock) = downloads(&project.root, args.locked, args.timeout, shared)?;
    // Held until every image is built and pushed: a collector in another process never takes
    // the manifest a push is about to read.
    let held = image::cache::LayerCache::new(&cache_dir())
        .and_then(|cache| cache.hold())
        .map_err(|e| Failure::Run(anyhow!("{}: {e}", cache_dir().display())))?;
    let exe = std::env::current_exe()
        .context("finding the imgbuild binary")
        .map_err(Failure::Run)?;
    let out = checked_out(args, &plans, formats)?;
    let context = Shared {
        project,
        args,
        remote,
        formats,
        codec: layer_codec(args),
        exe,
        out,
        downloads: &downloads,
        lock: &lock,
        display,
        json,
        signing,
        image_signer,
        signature_policy,
        cpu_shares: several.then(|| std::sync::Arc::new(image::build::cpu_share::CpuShares::new())),
    };
    let errors = build_all(&context, &plans, push_to.as_deref());
    if let Some(file) = &args.timeline {
        timeline(file, &context.out, &plans)?;
    }
    save_lock(&project.root, &downloads, &lock)?;
    drop(held);
    collect_cache(cache_limit, since, json);
    match errors.len() {
        0 if args.boot => boot_each(&context, &plans),
        0 => Ok(ExitCode::SUCCESS),
        _ => Err(first_of(errors)),
    }
}

/// The output folder, absolute, and what goes to it checked before any work: names Warewulf
/// reads, what `--boot` needs, a folder imgbuild can write.
fn checked_out(
    args: &BuildArgs,
    plans: &[planner::Plan],
    formats: Formats,
) -> Result<PathBuf, Failure> {
    let out = std::path::absolute(&args.out).unwrap_or_else(|_| args.out.clone());
    check_outputs(&out, plans, formats)?;
    if args.boot {
        check_bootable(formats, &args.boot_overlays, &args.boot_secure)?;
    } else if args.boot_secure.secure_boot {
        return Err(Failure::Input(anyhow!(
            "--secure-boot is how --boot boots the image: add --boot"
        )));
    }
    super::session::ensure_writable(&out, "--out", "choose a folder imgbuild can write")?;
    Ok(out)
}

/// The outputs `--format` asks for.
fn formats_of(args: &BuildArgs) -> Formats {
    Formats {
        oci: args.format.contains(&OutputFormat::Oci),
        docker_archive: args.format.contains(&OutputFormat::DockerArchive),
        chroot: args.format.contains(&OutputFormat::Chroot),
    }
}

/// Several images failed at once: each is told, and the first one's is the run's failure.
fn first_of(mut errors: Vec<Failure>) -> Failure {
    for e in &errors[1..] {
        match e {
            Failure::Input(e) | Failure::Run(e) => eprintln!("error: {}", crate::redact(e)),
        }
    }
    errors.remove(0)
}

/// `--warewulf`: refused before any work when the outputs asked for are not ones Warewulf
/// can import.
fn check_warewulf(args: &BuildArgs, formats: Formats) -> Result<(), Failure> {
    if let Some(version) = args.warewulf {
        let outputs = crate::warewulf::Outputs {
            docker_archive: formats.docker_archive,
            rootfs: formats.chroot,
            pushed: args.push.is_some(),
            zstd: args.compression == LayerCompression::Zstd,
        };
        if let Some(why) = crate::warewulf::refusal(version, outputs) {
            return Err(Failure::Input(anyhow!(why)));
        }
    }
    Ok(())
}

/// The layers' compression: `--compression` at `--gzip-level`, or zstd at level 3.
fn layer_codec(args: &BuildArgs) -> Codec {
    match args.compression {
        LayerCompression::Gzip => Codec::gzip(args.gzip_level),
        LayerCompression::Zstd => Codec {
            compression: Compression::Zstd,
            level: 3,
        },
    }
}

/// Builds the plans `--jobs` at a time: workers take the next image until none is left or one
/// failed; returns the failures.
fn build_all(
    context: &Shared,
    plans: &[planner::Plan],
    push_to: Option<&[registry::Reference]>,
) -> Vec<Failure> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let errors = Mutex::new(Vec::new());
    let workers = (context.args.jobs as usize).clamp(1, plans.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= plans.len() || failed.load(Ordering::SeqCst) {
                    break;
                }
                let push_to = push_to.and_then(|refs| refs.get(i));
                if let Err(e) = build_one(context, &plans[i], push_to) {
                    failed.store(true, Ordering::SeqCst);
                    errors.lock().unwrap_or_else(|p| p.into_inner()).push(e);
                }
            });
        }
    });
    errors.into_inner().unwrap_or_else(|p| p.into_inner())
}

/// `--boot` needs QEMU, an output it can boot from, overlays that are folders and, with
/// `--secure-boot`, the firmware, shim, GRUB and a certificate that reads: refused before any
/// work.
fn check_bootable(
    formats: Formats,
    overlays: &[std::path::PathBuf],
    secure: &crate::cli::SecureBootArgs,
) -> Result<(), Failure> {
    if !formats.oci && !formats.chroot {
        return Err(Failure::Input(anyhow!(
            "--boot boots the image from its OCI layout or rootfs folder: add oci or chroot to --format"
        )));
    }
    if let Some(overlay) = overlays.iter().find(|o| !o.is_dir()) {
        return Err(Failure::Input(anyhow!(
            "--boot-overlay {}: not a folder; give a folder whose files are laid over the image at boot",
            overlay.display()
        )));
    }
    if secure.secure_boot {
        boot::secure_boot_files().map_err(|e| Failure::Input(anyhow!(e)))?;
        if let Some(cert) = &secure.mok_cert {
            boot::Mok::from_file(cert).map_err(|e| Failure::Input(anyhow!(e)))?;
        }
    }
    boot::qemu_available().map_err(|e| Failure::Input(anyhow!(e)))
}

/// `--boot`: each image booted after all were built; exit 1 when a boot check failed.
fn boot_each(context: &Shared, plans: &[planner::Plan]) -> Result<ExitCode, Failure> {
    let mut all_ok = true;
    for plan in plans {
        let dir = context.out.join(&plan.image);
        // A step of its own: the heartbeat then says the boot is what runs.
        let reporter = ForImage::new(context.display.clone(), Some(&plan.image), &plan.roles);
        reporter.event(&engine::events::Event::Step {
            what: format!(
                "boot: packing {} as Warewulf does, then booting it in QEMU",
                dir.display()
            ),
        });
        all_ok &= super::boot::after_build(
            &dir,
            &context.args.boot_overlays,
            &context.args.boot_secure,
            context.json,
        )?;
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What every image of one `build` shares.
struct Shared<'a> {
    project: &'a Project,
    args: &'a BuildArgs,
    remote: std::sync::Arc<image::cache::remote::RemoteCache>,
    formats: Formats,
    codec: Codec,
    exe: PathBuf,
    out: PathBuf,
    downloads: &'a MirrorDownloads,
    lock: &'a mirror::Lock,
    display: std::sync::Arc<dyn crate::progress::Display>,
    json: bool,
    /// The module-signing secret, checked.
    signing: Option<std::sync::Arc<image::signing::ModuleSigning>>,
    /// The key `--push` signs pushed images with, when the site gives one.
    image_signer: Option<registry::signer::ImageSigner>,
    /// The site's signature policy, when it has one.
    signature_policy: Option<std::sync::Arc<registry::policy::SitePolicy>>,
    /// The cores split between the images built at once, when several are.
    cpu_shares: Option<std::sync::Arc<image::build::cpu_share::CpuShares>>,
}

/// Builds one image, prints what it made, and pushes it when asked.
fn build_one(
    cx: &Shared,
    plan: &planner::Plan,
    push_to: Option<&registry::Reference>,
) -> Result<(), Failure> {
    super::output::print_warnings(&plan.warnings);
    crate::interrupt::building(&plan.image);
    let reporter = ForImage::new(cx.display.clone(), Some(&plan.image), &plan.roles);
    let settings = Settings {
        project_root: cx.project.root.clone(),
        out: cx.out.clone(),
        formats: cx.formats,
        no_cache: cx.args.no_cache,
        exe: cx.exe.clone(),
        cache_dir: cache_dir(),
        epoch: source_date_epoch(&cx.project.root, &plan.inputs)?,
        codec: cx.codec,
        squash: cx.args.squash,
        verify: !cx.args.no_verify,
        remote: cx.remote.clone(),
        module_signing: cx.signing.clone(),
        signature_policy: cx.signature_policy.clone(),
        cpu_shares: cx.cpu_shares.clone(),
    };
    // An artifact not pinned yet is fetched (into the download cache) so that the layer key
    // holds its sha256: a changed file on the mirror then rebuilds the layer.
    let pin = |url: &str| -> Option<String> {
        if let Some(pinned) = cx.lock.get(url) {
            return Some(pinned.sha256.clone());
        }
        if let Some(pinned) = cx.downloads.0.lock().get(url) {
            return Some(pinned.sha256.clone());
        }
        cx.downloads.0.fetch(url, None).ok()?;
        cx.downloads.0.lock().get(url).map(|p| p.sha256.clone())
    };
    let report =
        image::build::build(plan, &settings, cx.downloads, &reporter, &pin).map_err(failure)?;
    if cx.json {
        let layers: Vec<serde_json::Value> = report
            .layers
            .iter()
            .map(|l| serde_json::json!({"role": l.role, "digest": l.digest, "size": l.size, "cached": l.cached, "from_registry": l.from_registry, "seconds": l.seconds, "why": l.why, "key": l.inputs.as_ref().map(|i| i.key()), "inputs": l.inputs}))
            .collect();
        println!(
            "{}",
            serde_json::json!({"event": "built", "image": report.image, "manifest": report.manifest, "config": report.config, "layers": layers, "outputs": report.outputs, "seconds": report.seconds, "verify": report.verify})
        );
    } else {
        reporter.print_out(&summary(&report, cx.args.warewulf));
    }
    match push_to {
        Some(reference) => {
            // The SBOM and the provenance go as referrers of the pushed manifest.
            let kinds = [
                (sbom::FILE_NAME, sbom::ARTIFACT_TYPE),
                (
                    image::build::provenance::FILE_NAME,
                    image::build::provenance::ARTIFACT_TYPE,
                ),
            ];
            let referrers: Vec<(&Path, &str)> = kinds
                .iter()
                .filter_map(|(name, kind)| {
                    let path = report.outputs.iter().find(|p| p.ends_with(name))?;
                    Some((path.as_path(), *kind))
                })
                .collect();
            let pushed = push(reference, &report.manifest, &referrers)?;
            sign_pushed(cx.image_signer.as_ref(), reference, &pushed)
        }
        None => Ok(()),
    }
}

/// The keys and policy of one `build`, read and checked before anything runs (each a bad
/// input when it does not read).
struct Trust {
    /// The module-signing secret.
    signing: Option<std::sync::Arc<image::signing::ModuleSigning>>,
    /// The key `--push` signs with.
    image_signer: Option<registry::signer::ImageSigner>,
    /// The site's signature policy for bases.
    signature_policy: Option<std::sync::Arc<registry::policy::SitePolicy>>,
}

fn trust(
    project: &Project,
    args: &BuildArgs,
    config: &mirror::MirrorConfig,
) -> Result<Trust, Failure> {
    let secrets = super::site::secrets(project, args, config)?;
    let signs = secrets
        .iter()
        .any(|s| s.id == registry::signer::IMAGE_SIGNING);
    if signs && args.push.is_none() {
        return Err(Failure::Input(anyhow!(
            "--secret id={} signs what --push pushes: add --push",
            registry::signer::IMAGE_SIGNING
        )));
    }
    let image_signer = crate::secret::image_signing(&secrets)?;
    Ok(Trust {
        signing: crate::secret::module_signing(&secrets)?.map(std::sync::Arc::new),
        image_signer,
        signature_policy: registry::policy::load(args.signature_policy.as_deref())
            .map_err(|e| Failure::Input(anyhow!(e)))?
            .map(std::sync::Arc::new),
    })
}

/// `--timeline FILE`: the images built (their reports in `out`) drawn side by side.
fn timeline(file: &Path, out: &Path, plans: &[planner::Plan]) -> Result<(), Failure> {
    let reports: Vec<image::report::Report> = plans
        .iter()
        .filter_map(|plan| image::report::read(&out.join(&plan.image)).ok())
        .collect();
    let drawn = image::timeline::svg(&reports.iter().collect::<Vec<_>>());
    std::fs::write(file, drawn)
        .map_err(|e| Failure::Run(anyhow!("--timeline {}: {e}", file.display())))
}

/// `opts` with the variables naming the module-signing key and certificate, when `signing`.
fn with_signing_vars(opts: &PlanOptions, signing: bool) -> PlanOptions {
    let mut opts = opts.clone();
    if signing {
        for (name, path) in image::signing::ModuleSigning::vars() {
            opts.extra_vars.insert(name.to_owned(), path.into());
        }
    }
    opts
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

/// Signs the manifest pushed as `reference` (`digest`) with the site's key, when it gave one,
/// attaching the signature as cosign and podman do.
fn sign_pushed(
    signer: Option<&registry::signer::ImageSigner>,
    reference: &registry::Reference,
    digest: &str,
) -> Result<(), Failure> {
    let Some(signer) = signer else {
        return Ok(());
    };
    let credentials =
        registry::Credentials::for_reference(&reference.registry, &reference.repository)
            .map_err(|e| Failure::Input(anyhow!(e)))?;
    let tag = signer
        .sign(reference, credentials, digest)
        .map_err(|e| Failure::Run(anyhow!("signing {reference}@{digest}: {e}")))?;
    eprintln!("signed {reference}@{digest}: {tag}");
    Ok(())
}

/// Pushes a built image (its blobs are in the blob cache) to `reference`, and each of
/// `referrers` (a file and its artifact type: the SBOM, the provenance) as a referrer of the
/// pushed manifest: the pushed manifest's digest.
fn push(
    reference: &registry::Reference,
    manifest_digest: &str,
    referrers: &[(&Path, &str)],
) -> Result<String, Failure> {
    let blobs = image::blobs::BlobStore::new(&cache_dir().join("blobs"))
        .context("opening the blob cache")
        .map_err(Failure::Run)?;
    let manifest = blobs
        .path(manifest_digest)
        .and_then(std::fs::read)
        .context("reading the built manifest")
        .map_err(Failure::Run)?;
    let parsed: serde_json::Value = serde_json::from_slice(&manifest)
        .context("reading the built manifest")
        .map_err(Failure::Run)?;
    let digests = std::iter::once(&parsed["config"])
        .chain(parsed["layers"].as_array().into_iter().flatten())
        .filter_map(|d| d["digest"].as_str());
    let to_push: Vec<registry::PushBlob> = digests
        .map(|digest| {
            Ok(registry::PushBlob {
                digest: digest.to_owned(),
                path: blobs
                    .path(digest)
                    .context("reading the built manifest")
                    .map_err(Failure::Run)?,
            })
        })
        .collect::<Result<_, Failure>>()?;
    let credentials =
        registry::Credentials::for_reference(&reference.registry, &reference.repository)
            .map_err(|e| Failure::Input(anyhow!(e)))?;
    let pushed = registry::push(
        reference,
        credentials.clone(),
        &to_push,
        &manifest,
        image::oci::MANIFEST,
    )
    .map_err(|e| Failure::Run(anyhow!("pushing to {reference}: {e}")))?;
    eprintln!(
        "pushed {reference}@{} ({} blobs uploaded, {} already there)",
        pushed.digest, pushed.uploaded, pushed.skipped
    );
    let subject = registry::Descriptor {
        media_type: image::oci::MANIFEST.to_owned(),
        digest: pushed.digest.clone(),
        size: manifest.len() as u64,
        artifact_type: None,
    };
    let repository = registry::Repository::open(reference, credentials, true);
    for (file, kind) in referrers {
        let failed = |e: registry::RegistryError| {
            Failure::Run(anyhow!(
                "pushing {} of {reference} as a referrer: {e}",
                file.display()
            ))
        };
        let blob = registry::PushBlob::of_file(file).map_err(failed)?;
        let artifact = repository
            .push_referrer(&subject, kind, &blob, kind)
            .map_err(failed)?;
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        eprintln!("pushed its {name} as a referrer: {reference}@{artifact}");
    }
    Ok(pushed.digest)
}

/// Refuses, before any work, an output Warewulf could not import: a docker-archive path with
/// a ':' (read as `file://...:tag`).
fn check_outputs(out: &Path, plans: &[planner::Plan], formats: Formats) -> Result<(), Failure> {
    if !formats.docker_archive {
        return Ok(());
    }
    for plan in plans {
        let (_, archive, _) = image::oci::output_paths(out, &plan.image);
        if !image::oci::archive_path_ok(&archive) {
            return Err(Failure::Input(anyhow!(
                "{}: a docker-archive path must not contain ':' (Warewulf reads it as file://PATH:TAG); choose another --out",
                archive.display()
            )));
        }
    }
    Ok(())
}

/// What a person reads when a build ends: the verify verdict, the size, the outputs and the
/// command that imports the image into Warewulf.
fn summary(
    report: &image::build::BuildReport,
    warewulf: Option<crate::warewulf::WarewulfVersion>,
) -> String {
    let mut text = format!(
        "{}: {} ({:.1}s)\n",
        report.image, report.manifest, report.seconds
    );
    let verdict = match &report.verify {
        Some(v) => format!(
            "passed ({} checks; {} skipped, see report.md)",
            v.checks.len(),
            v.skipped.len()
        ),
        None => "not run (--no-verify)".to_owned(),
    };
    text.push_str(&format!("  verify: {verdict}\n"));
    text.push_str(&where_the_time_went(report));
    let compressed: u64 = report.layers.iter().map(|l| l.size).sum();
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let unpacked = match &report.build_only {
        // Measured in the image by the step itself: the layers' sum counts removed files too.
        Some(b) => format!(
            "{:.1} MB unpacked (what a node holds in RAM; {:.1} MB before the {} build-only packages were removed)",
            mb(b.bytes_after),
            mb(b.bytes_before),
            b.removed.len()
        ),
        None => format!(
            "about {:.1} MB unpacked (what a node holds in RAM)",
            mb(report.layers.iter().map(|l| l.unpacked).sum())
        ),
    };
    text.push_str(&format!(
        "  size: {:.1} MB compressed in {} layers; {unpacked}\n",
        mb(compressed),
        report.layers.len(),
    ));
    for output in &report.outputs {
        text.push_str(&format!("  {}\n", output.display()));
    }
    if let Some(archive) = report
        .outputs
        .iter()
        .find(|o| o.extension().is_some_and(|e| e == "tar"))
    {
        let version = warewulf.unwrap_or(crate::warewulf::WarewulfVersion::V4_6);
        let command = version.import_command(&archive.display().to_string(), &report.image);
        text.push_str(&format!(
            "  import into Warewulf {}: {command}\n",
            version.as_str()
        ));
    }
    text
}

/// `  time: 412.3s; most in nvidia 230.1s, mofed 60.2s, kernel 40.0s; after the roles (the last
/// blobs, the image, verify and outputs) 31.0s`: the roles that ran longest (a built layer's
/// run, without its blob's writing, which overlaps later roles), and what came after them.
fn where_the_time_went(report: &image::build::BuildReport) -> String {
    let mut layers: Vec<(&str, f64)> = report
        .layers
        .iter()
        .map(|l| match l.cached {
            true => (l.role.as_str(), l.seconds),
            false => (l.role.as_str(), l.built_seconds),
        })
        .collect();
    layers.sort_by(|a, b| b.1.total_cmp(&a.1));
    let slowest: Vec<String> = layers
        .iter()
        .take(3)
        .filter(|(_, seconds)| *seconds >= 0.05)
        .map(|(role, seconds)| format!("{role} {seconds:.1}s"))
        .collect();
    let most = match slowest.is_empty() {
        true => String::new(),
        false => format!("; most in {}", slowest.join(", ")),
    };
    format!(
        "  time: {:.1}s{most}; after the roles (the last blobs, the image, verify and outputs) {:.1}s\n",
        report.seconds, report.after_roles
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_gives_the_verdict_the_size_and_the_import_command() {
        let layer = |size| image::build::LayerReport {
            role: "r".into(),
            digest: "sha256:d".into(),
            size,
            unpacked: size * 3,
            diff_id: "sha256:i".into(),
            cached: false,
            from_registry: false,
            // The role's run (1 s) and its blob's writing, which overlapped the next role.
            seconds: 1.7,
            why: Vec::new(),
            built_at: 0,
            built_seconds: 1.0,
            costs: Vec::new(),
            compiles: Default::default(),
            inputs: None,
        };
        let report = image::build::BuildReport {
            image: "debian-12-compute".into(),
            manifest: "sha256:m".into(),
            config: "sha256:c".into(),
            layers: vec![layer(1_500_000), layer(500_000)],
            outputs: vec![
                PathBuf::from("/out/debian-12-compute/oci"),
                PathBuf::from("/out/debian-12-compute/debian-12-compute.tar"),
            ],
            seconds: 2.5,
            after_roles: 0.5,
            verify: None,
            build_only: None,
        };
        let text = summary(&report, None);
        assert!(
            text.contains(
                "  time: 2.5s; most in r 1.0s, r 1.0s; after the roles (the last blobs, the image, verify and outputs) 0.5s\n"
            ),
            "{text}"
        );
        assert!(text.contains("  verify: not run (--no-verify)\n"), "{text}");
        assert!(
            text.contains("  size: 2.0 MB compressed in 2 layers; about 6.0 MB unpacked"),
            "{text}"
        );
        assert!(
            text.contains("  import into Warewulf 4.6: wwctl image import --force /out/debian-12-compute/debian-12-compute.tar debian-12-compute\n"),
            "{text}"
        );
        let removal = image::build::BuildOnlyRemoval {
            removed: vec!["gcc".into(), "dkms".into()],
            bytes_before: 1_700_000_000,
            bytes_after: 1_300_000_000,
            modules_kept: Vec::new(),
            modules_restored: Vec::new(),
        };
        let text = summary(
            &image::build::BuildReport {
                build_only: Some(removal),
                ..report
            },
            Some(crate::warewulf::WarewulfVersion::V4_5),
        );
        assert!(
            text.contains("wwctl container import --force /out/debian-12-compute/debian-12-compute.tar debian-12-compute"),
            "{text}"
        );
        assert!(
            text.contains("; 1300.0 MB unpacked (what a node holds in RAM; 1700.0 MB before the 2 build-only packages were removed)"),
            "{text}"
        );
    }
}
