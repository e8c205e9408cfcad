//! `imgbuild verify`: the checks of a finished image, reading files only.

use std::path::Path;
use std::process::ExitCode;

use anyhow::anyhow;
use verify::{Expect, Report};

use crate::cli::VerifyArgs;
use crate::Failure;

/// Prints a report as a list of checks.
pub fn print_report(report: &Report) {
    println!(
        "{}: kernel {}",
        report.image,
        report.kernel.as_deref().unwrap_or("(none found)")
    );
    for check in &report.checks {
        println!(
            "  {} {:<20} {}",
            if check.ok { "ok  " } else { "FAIL" },
            check.id,
            check.detail
        );
    }
    println!(
        "{}",
        if report.ok {
            "verify: passed"
        } else {
            "verify: FAILED"
        }
    );
}

/// Checks `args.image`.
pub fn run(args: &VerifyArgs, json: bool) -> Result<ExitCode, Failure> {
    let input = &args.image;
    if !input.exists() {
        return Err(Failure::Input(anyhow!(
            "{}: no such file or folder; give a docker-archive, an OCI layout or a rootfs folder",
            input.display()
        )));
    }
    let is_rootfs = input.is_dir() && !input.join("index.json").is_file();
    let staging;
    let (root, labels) = if is_rootfs {
        (input.to_path_buf(), Default::default())
    } else {
        let parent = std::env::temp_dir();
        staging = tempfile::Builder::new()
            .prefix("imgbuild-verify-")
            .tempdir_in(parent)
            .map_err(|e| Failure::Run(anyhow!(e)))?;
        let labels = image::unpack::unpack(input, staging.path()).map_err(|e| {
            Failure::Input(anyhow!("{}: cannot read the image: {e}", input.display()))
        })?;
        (staging.path().to_path_buf(), labels)
    };
    let label = |k: &str| labels.get(k).cloned();
    let expect = Expect {
        kernel: args.kernel.clone().or_else(|| label("io.imgbuild.kernel")),
        mofed: args.mofed.clone().or_else(|| label("io.imgbuild.mofed")),
        nvidia: args.nvidia.clone().or_else(|| label("io.imgbuild.nvidia")),
        initramfs: args.initramfs || label("io.imgbuild.initramfs").is_some(),
    };
    let report = verify::verify(Path::new(&root), &input.display().to_string(), &expect);
    if json {
        println!(
            "{}",
            serde_json::to_string(&report).map_err(|e| Failure::Run(anyhow!(e)))?
        );
    } else {
        print_report(&report);
    }
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
