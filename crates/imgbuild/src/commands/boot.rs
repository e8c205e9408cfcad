//! `imgbuild boot`: the image booted in QEMU as Warewulf boots a node, its modules loaded.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Context};
use boot::{Accel, BootError, BootRequest};

use crate::cli::{AccelArg, BootArgs, SecureBootArgs};
use crate::Failure;

/// Boots `args.image` and prints what loaded; exit 1 when a check failed.
pub fn run(args: &BootArgs, json: bool) -> Result<ExitCode, Failure> {
    let console = args.console.clone().unwrap_or_else(|| {
        if args.image.join("report.json").is_file() {
            args.image.join("boot-console.log")
        } else {
            std::path::PathBuf::from("boot-console.log")
        }
    });
    let request = BootRequest {
        input: args.image.clone(),
        memory_mb: args.memory.map(|bytes| bytes >> 20),
        timeout: Duration::from_secs(args.timeout),
        accel: match args.accel {
            AccelArg::Auto => Accel::Auto,
            AccelArg::Kvm => Accel::Kvm,
            AccelArg::Tcg => Accel::Tcg,
        },
        console_log: console,
        overlays: args.overlays.clone(),
        expect_failed: args.expect_failed.clone(),
        secure_boot: args.secure.request(),
    };
    if !json {
        eprintln!(
            "boot: packing {} as Warewulf does, then booting it",
            request.input.display()
        );
    }
    let report = boot_and_record(&request)?;
    super::report_out(json, &report, report.ok, print_report)
}

/// `build --boot`: boots the image just written to `dir` with the defaults, the given
/// overlays and Secure Boot if asked, records it in its report and prints it; whether every
/// check passed.
pub fn after_build(
    dir: &Path,
    overlays: &[PathBuf],
    secure: &SecureBootArgs,
    json: bool,
) -> Result<bool, Failure> {
    let request = BootRequest {
        input: dir.to_owned(),
        memory_mb: None,
        timeout: Duration::from_secs(300),
        accel: Accel::Auto,
        console_log: dir.join("boot-console.log"),
        overlays: overlays.to_vec(),
        expect_failed: Vec::new(),
        secure_boot: secure.request(),
    };
    let report = boot_and_record(&request)?;
    if json {
        let mut event = serde_json::to_value(&report).map_err(|e| Failure::Run(anyhow!(e)))?;
        event["event"] = "boot".into();
        println!("{event}");
    } else {
        print_report(&report);
    }
    Ok(report.ok)
}

fn boot_and_record(request: &BootRequest) -> Result<boot::BootReport, Failure> {
    let report = boot::boot(request).map_err(|e| match e {
        BootError::Input(_) | BootError::Missing(_) => Failure::Input(anyhow!(e)),
        BootError::Io { .. } => Failure::Run(anyhow!(e)),
    })?;
    if request.input.join("report.json").is_file() {
        record_in_report(&request.input, &report)?;
    }
    Ok(report)
}

/// Puts the boot into the build's report: its typed boot section, written by the report's own
/// writer (report.json and report.md together), replacing an earlier boot's.
fn record_in_report(dir: &Path, report: &boot::BootReport) -> Result<(), Failure> {
    let mut build = image::report::read(dir)
        .with_context(|| format!("reading {}", dir.join("report.json").display()))
        .map_err(Failure::Run)?;
    build.boot = Some(report.record());
    image::report::write(dir, &build)
        .with_context(|| format!("adding the boot to {}", dir.join("report.json").display()))
        .map_err(Failure::Run)
}

fn print_report(report: &boot::BootReport) {
    println!(
        "boot: kernel {} under {} ({}), {} MB",
        report.kernel, report.accel, report.accel_reason, report.memory_mb
    );
    let record = report.record();
    if let Some(sb) = &record.secure_boot {
        println!("  {}", sb.describe().replace("**", ""));
    }
    for module in &record.modules {
        println!("  module {:<24} {}", module.name, module.describe());
    }
    for check in &report.checks {
        super::print_check(check.ok, check.id, &check.detail);
    }
    println!(
        "boot: {} in {:.1}s (console: {})",
        if report.ok { "passed" } else { "FAILED" },
        report.seconds,
        report.console_log.display()
    );
}
