//! `imgbuild verify`: the checks of a finished image, reading files only.

use std::process::ExitCode;

use anyhow::anyhow;
use verify::{Expect, Report};

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

/// The certificate of `--signer-cert`, read before the image: a wrong file is refused at once.
fn signer_cert(path: &std::path::Path) -> Result<verify::SignerCert, Failure> {
    let bytes = std::fs::read(path).map_err(|e| {
        Failure::Input(anyhow!(
            "--signer-cert {}: {e}: give the certificate (PEM or DER) of the key the modules are signed with",
            path.display()
        ))
    })?;
    verify::SignerCert::parse(&bytes).map_err(|e| {
        Failure::Input(anyhow!(
            "--signer-cert {}: {e}: give the certificate (PEM or DER) of the key the modules are signed with (the site's MOK certificate), not its private key",
            path.display()
        ))
    })
}

/// The `provenance` check: the build's provenance vouches for the SBOM `sbom` (which the image
/// is checked against); an unreadable provenance is bad input.
fn provenance_check(
    file: &std::path::Path,
    sbom: &std::path::Path,
) -> Result<verify::Check, Failure> {
    let read = |path: &std::path::Path| {
        std::fs::read(path).map_err(|e| Failure::Input(anyhow!("{}: {e}", path.display())))
    };
    let statement: serde_json::Value = serde_json::from_slice(&read(file)?).map_err(|e| {
        Failure::Input(anyhow!(
            "{}: not a provenance statement (JSON): {e}",
            file.display()
        ))
    })?;
    let vouched = image::build::provenance::vouches_for(&statement, None, &read(sbom)?);
    let subject = statement["subject"][0]["name"].as_str().unwrap_or("?");
    Ok(verify::Check {
        id: "provenance".to_owned(),
        ok: vouched.is_ok(),
        detail: match vouched {
            Ok(()) => format!(
                "{} (the build of {subject}) vouches for {}",
                file.display(),
                sbom.display()
            ),
            Err(why) => format!("{}: {why}", file.display()),
        },
    })
}

/// Checks `args.image`.
pub fn run(args: &VerifyArgs, json: bool) -> Result<ExitCode, Failure> {
    let started = std::time::Instant::now();
    let signer_cert = args.signer_cert.as_deref().map(signer_cert).transpose()?;
    if !json && !crate::progress::mode::quiet() {
        // Reading a gigabyte archive takes a while: say so before, and how long after.
        let size = std::fs::metadata(&args.image)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| format!(" ({:.1} GB)", m.len() as f64 / 1e9))
            .unwrap_or_default();
        eprintln!("verify: reading {}{size}", args.image);
    }
    let (snapshot, labels) = super::image_input::read_image(&args.image)?;
    if !json && !crate::progress::mode::quiet() {
        eprintln!(
            "verify: read {} files in {:.1}s",
            snapshot.entries().count(),
            started.elapsed().as_secs_f64()
        );
    }
    // What the image was built for, and what the command line adds.
    let built_for = verify::Expect::of_labels(&spec::ImageLabels::read(&labels));
    let expect = Expect {
        kernel: args.kernel.clone().or(built_for.kernel),
        mofed: args.mofed.clone().or(built_for.mofed),
        doca: args.doca.clone().or(built_for.doca),
        nvidia: args.nvidia.clone().or(built_for.nvidia),
        nvidia_flavor: args.nvidia_flavor.or(built_for.nvidia_flavor),
        initramfs: args.initramfs || built_for.initramfs,
        allow_opensm: args.allow_opensm || built_for.allow_opensm,
        no_build_tools: args.no_build_tools || built_for.no_build_tools,
        signer_cert: signer_cert.or(built_for.signer_cert),
    };
    let mut report = verify::verify(&snapshot, &args.image, &expect);
    if let Some(file) = &args.sbom {
        let recorded = super::sbom::read(file)?;
        let current = super::sbom::of_image(&snapshot, &args.image, &labels);
        report
            .checks
            .push(super::sbom::check(&recorded, &current, file));
        if let Some(provenance) = &args.provenance {
            report.checks.push(provenance_check(provenance, file)?);
        }
        report.ok = report.checks.iter().all(|c| c.ok);
    }
    super::output::report_out(json, &report, report.ok, print_report)
}
