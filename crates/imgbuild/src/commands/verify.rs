//! `imgbuild verify`: the checks of a finished image, reading files only.

use std::path::Path;
use std::process::ExitCode;

use anyhow::anyhow;
use verify::inputs::{InputError, Labels};
use verify::{Expect, Report, Snapshot};

use crate::cli::VerifyArgs;
use crate::Failure;

/// Prints a report: each check that ran, each that was skipped and why, and the verdict.
pub fn print_report(report: &Report) {
    let source = match report.kernel_source {
        Some(verify::KernelSource::OnlyOne) => " (the image's only kernel; nothing named one)",
        _ => "",
    };
    println!(
        "{}: kernel {}{source}",
        report.image,
        report.kernel.as_deref().unwrap_or("(none found)")
    );
    for check in &report.checks {
        super::output::print_check(check.ok, &check.id, &check.detail);
    }
    for skipped in &report.skipped {
        println!("  skip {:<20} {}", skipped.id, skipped.reason);
    }
    let ran = report.checks.len();
    let skipped = report.skipped.len();
    if report.ok {
        println!("verify: passed ({ran} checks; {skipped} skipped, listed above)");
    } else {
        let failed = report.checks.iter().filter(|c| !c.ok).count();
        println!("verify: FAILED ({failed} of {ran} checks; {skipped} skipped)");
    }
}

/// Reads the image `input` names: a path, or a registry reference pulled blob by blob (each
/// verified by digest) into the cache.
fn read_image(input: &str) -> Result<(Snapshot, Labels), Failure> {
    if input.starts_with("docker://") {
        registry::Reference::parse(input).map_err(|e| Failure::Input(anyhow!("{input}: {e}")))?;
        let conf = registry::RegistriesConf::load().map_err(|e| Failure::Input(anyhow!(e)))?;
        let blobs = super::session::cache_dir().join("registry");
        let (pulled, _) = registry::pull_via(&conf, input, &blobs)
            .map_err(|e| Failure::Run(anyhow!("pulling {input}: {e}")))?;
        let layers: Vec<_> = pulled.layers.iter().map(|l| l.path.clone()).collect();
        return verify::inputs::read_pulled(&layers, &pulled.config)
            .map_err(|e| Failure::Run(anyhow!(e)));
    }
    let path = Path::new(input);
    if !path.exists() {
        return Err(Failure::Input(anyhow!(
            "{input}: no such file or folder; give a rootfs folder, a Warewulf chroot or image (.img, .img.gz), an OCI layout, an oci-archive or docker-archive tar, or docker://REGISTRY/REPO:TAG"
        )));
    }
    verify::inputs::read(path).map_err(|e| match e {
        InputError::NotAnImage { .. } => Failure::Input(anyhow!(e)),
        InputError::Io { .. } => Failure::Run(anyhow!("cannot read the image: {e}")),
    })
}

/// Checks `args.image`.
pub fn run(args: &VerifyArgs, json: bool) -> Result<ExitCode, Failure> {
    let started = std::time::Instant::now();
    if !json {
        // Reading a gigabyte archive takes a while: say so before, and how long after.
        let size = std::fs::metadata(&args.image)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| format!(" ({:.1} GB)", m.len() as f64 / 1e9))
            .unwrap_or_default();
        eprintln!("verify: reading {}{size}", args.image);
    }
    let (snapshot, labels) = read_image(&args.image)?;
    if !json {
        eprintln!(
            "verify: read {} files in {:.1}s",
            snapshot.entries().count(),
            started.elapsed().as_secs_f64()
        );
    }
    // What the image was built for, and what the command line adds.
    let built_for = verify::ImageLabels::read(&labels).expect();
    let expect = Expect {
        kernel: args.kernel.clone().or(built_for.kernel),
        mofed: args.mofed.clone().or(built_for.mofed),
        doca: args.doca.clone().or(built_for.doca),
        nvidia: args.nvidia.clone().or(built_for.nvidia),
        nvidia_flavor: args.nvidia_flavor.or(built_for.nvidia_flavor),
        initramfs: args.initramfs || built_for.initramfs,
        allow_opensm: args.allow_opensm || built_for.allow_opensm,
        no_build_tools: args.no_build_tools || built_for.no_build_tools,
    };
    let report = verify::verify(&snapshot, &args.image, &expect);
    super::output::report_out(json, &report, report.ok, print_report)
}
