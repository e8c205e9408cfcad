//! `imgbuild boot`: the image booted in QEMU as Warewulf boots a node, its modules loaded.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::anyhow;
use boot::{Accel, BootError, BootRequest, Outcome};

use crate::cli::{AccelArg, BootArgs};
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
    };
    if !json {
        eprintln!(
            "boot: packing {} as Warewulf does, then booting it",
            args.image.display()
        );
    }
    let report = boot::boot(&request).map_err(|e| match e {
        BootError::Input(_) | BootError::Missing(_) => Failure::Input(anyhow!(e)),
        BootError::Io { .. } => Failure::Run(anyhow!(e)),
    })?;
    super::report_out(json, &report, report.ok, print_report)
}

fn print_report(report: &boot::BootReport) {
    println!(
        "boot: kernel {} under {} ({}), {} MB",
        report.kernel, report.accel, report.accel_reason, report.memory_mb
    );
    for module in &report.findings.modules {
        let outcome = match module.outcome {
            Outcome::Loaded => "loaded".to_owned(),
            Outcome::NoDevice => "no such device (a hardware driver on a VM)".to_owned(),
            Outcome::Failed => format!("FAILED: {}", module.message),
        };
        println!("  module {:<24} {outcome}", module.name);
    }
    if !report.findings.failed_units.is_empty() {
        println!(
            "  failed units (a node gets its site files from Warewulf's overlays): {}",
            report.findings.failed_units.join(" ")
        );
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
