//! `imgbuild boot`: the image booted in QEMU as Warewulf boots a node, its modules loaded.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Context};
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
        overlays: args.overlays.clone(),
        expect_failed: args.expect_failed.clone(),
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

/// `build --boot`: boots the image just written to `dir` with the defaults, records it in its
/// report and prints it; whether every check passed.
pub fn after_build(dir: &Path, json: bool) -> Result<bool, Failure> {
    let request = BootRequest {
        input: dir.to_owned(),
        memory_mb: None,
        timeout: Duration::from_secs(300),
        accel: Accel::Auto,
        console_log: dir.join("boot-console.log"),
        overlays: Vec::new(),
        expect_failed: Vec::new(),
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

/// Puts the boot into the build's report: a `boot` member of report.json and a section at the
/// end of report.md (replacing those of an earlier boot).
fn record_in_report(dir: &Path, report: &boot::BootReport) -> Result<(), Failure> {
    let json_path = dir.join("report.json");
    let build = std::fs::read(&json_path)
        .map_err(anyhow::Error::from)
        .and_then(|bytes| {
            let mut build: serde_json::Value = serde_json::from_slice(&bytes)?;
            build["boot"] = serde_json::to_value(report)?;
            Ok(serde_json::to_vec_pretty(&build)?)
        })
        .with_context(|| format!("adding the boot to {}", json_path.display()))
        .map_err(Failure::Run)?;
    super::write_atomically(&json_path, &build)?;
    let md_path = dir.join("report.md");
    let mut md = std::fs::read_to_string(&md_path).unwrap_or_default();
    if let Some(at) = md.find(BOOT_HEADING) {
        md.truncate(at);
    }
    md.push_str(&markdown(report));
    super::write_atomically(&md_path, md.as_bytes())?;
    Ok(())
}

const BOOT_HEADING: &str = "\n#### boot: ";

fn markdown(report: &boot::BootReport) -> String {
    let mut md = format!(
        "{BOOT_HEADING}{} in {:.1} s (kernel {} under {}, {} MB)\n\n| module | outcome |\n|---|---|\n",
        if report.ok { "passed" } else { "**FAILED**" },
        report.seconds,
        report.kernel,
        report.accel,
        report.memory_mb
    );
    for module in &report.findings.modules {
        md.push_str(&format!(
            "| {} | {} |\n",
            module.name,
            outcome(module).replace('|', "\\|")
        ));
    }
    md.push_str("\n| check | | detail |\n|---|---|---|\n");
    for check in &report.checks {
        md.push_str(&format!(
            "| {} | {} | {} |\n",
            check.id,
            if check.ok { "ok" } else { "**FAIL**" },
            check.detail.replace('|', "\\|").replace('\n', " ")
        ));
    }
    md
}

fn outcome(module: &boot::ModuleResult) -> String {
    match module.outcome {
        Outcome::Loaded => "loaded".to_owned(),
        Outcome::NoDevice => "no such device (a hardware driver on a VM)".to_owned(),
        Outcome::Failed => format!("FAILED: {}", module.message),
    }
}

fn print_report(report: &boot::BootReport) {
    println!(
        "boot: kernel {} under {} ({}), {} MB",
        report.kernel, report.accel, report.accel_reason, report.memory_mb
    );
    for module in &report.findings.modules {
        println!("  module {:<24} {}", module.name, outcome(module));
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
