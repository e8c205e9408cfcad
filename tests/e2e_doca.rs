//! DOCA-OFED end to end (issue 33): Debian 12 images whose mofed role installs DOCA-OFED from a
//! DOCA repository stand-in made at test time (tests/fixtures/installers/make-doca-repo.sh:
//! packages built with dpkg-deb, signed with a throwaway key, served on 127.0.0.1), its kernel
//! modules compiled with kbuild for the pinned kernel through each generation's way: DKMS
//! (DOCA 3.2) and the kernel-support repository (DOCA 3.1); each verified. A release whose
//! DKMS package skips the pinned kernel fails the build.
//! The recipes' first five roles are debian-12-compute's, with the same variables and the same
//! layer cache (e2e_debian's), so only the mofed and openibd layers are built here.
//! Needs root, debootstrap and the machine's Debian archive, as CI has.

mod common;
#[path = "support/e2e_project.rs"]
mod e2e_project;

use std::time::Instant;

use common::*;
use e2e_project::{doca_project, E2eProject, STACK_CHECKS, UNSIGNED_PORT};
use serde_json::Value;

const KERNEL: &str = "6.1.0-50-amd64";

type Setup = E2eProject;

fn setup() -> Setup {
    doca_project("imgbuild-e2e-doca-", &[], UNSIGNED_PORT)
}

/// Builds `image` (OCI layout only) with e2e_debian's layer cache: its exit and `built` event.
fn build(s: &Setup, image: &str) -> (std::process::Output, Value) {
    s.build(image, &[])
}

/// Builds and verifies one DOCA image; its modules are the stand-in's, under `module_dir`,
/// built for the pinned kernel, and verify finds DOCA's stack and the recipe's version.
fn builds_and_verifies(s: &Setup, image: &str, doca: &str, ofed: &str, module_dir: &str) {
    let started = Instant::now();
    let (result, built) = build(s, image);
    let seconds = started.elapsed().as_secs_f64();
    assert!(result.status.success(), "{image}: {}", stderr(&result));
    let verify = &built["verify"];
    assert_eq!(verify["ok"], true, "{image}: {verify:#}");
    for id in STACK_CHECKS.iter().chain(&["doca_version"]) {
        assert_eq!(check(verify, id)["ok"], true, "{image}: {id}: {verify:#}");
    }
    let ofed_info = check(verify, "ofed_info")["detail"].to_string();
    assert!(
        ofed_info.contains(&format!(
            "OFED-internal-{ofed}, DOCA-OFED's (the recipe's DOCA {doca})"
        )),
        "{image}: {ofed_info}"
    );
    let version = check(verify, "doca_version")["detail"].to_string();
    assert!(
        version.contains(&format!("doca-ofed {doca} is DOCA {doca}'s")),
        "{version}"
    );
    let ours: Vec<&Value> = verify["modules"]
        .as_array()
        .expect("modules")
        .iter()
        .filter(|m| m["path"].as_str().is_some_and(|p| p.contains(module_dir)))
        .collect();
    assert_eq!(
        ours.len(),
        7,
        "{image}: the stand-in's 7 modules: {ours:#?}"
    );
    for module in ours {
        let vermagic = module["vermagic"].as_str().unwrap_or_default();
        assert!(
            vermagic.starts_with(&format!("{KERNEL} ")),
            "{image}: {} has vermagic {vermagic}",
            module["path"]
        );
    }
    // The build's report names the InfiniBand stack the recipe chose.
    let report: Value = serde_json::from_slice(
        &std::fs::read(s.out.join(image).join("report.json")).expect("report.json"),
    )
    .expect("report JSON");
    assert_eq!(report["doca"], doca, "{image}");
    assert_eq!(report["mofed"], Value::Null, "{image}");
    let layers = built["layers"].as_array().expect("layers");
    let fresh: Vec<&str> = layers
        .iter()
        .filter(|l| l["cached"] == false)
        .filter_map(|l| l["role"].as_str())
        .collect();
    eprintln!("{image}: built in {seconds:.1}s, layers built (not cached): {fresh:?}");
}

#[test]
fn doca_ofed_builds_for_the_pinned_kernel_through_dkms_and_the_kernel_support_repository() {
    let s = setup();
    // DOCA 3.2: dkms autoinstall -k, every module's dkms status `installed`.
    builds_and_verifies(
        &s,
        "debian-12-doca-dkms",
        "3.2.1",
        "25.10-1.7.1",
        "/updates/dkms/",
    );
    // DOCA 3.1: doca-kernel-support -k's local repository of kernel packages.
    builds_and_verifies(
        &s,
        "debian-12-doca-kernel-support",
        "3.1.0",
        "25.07-0.9.7",
        "/updates/mlnx-ofa_kernel/",
    );
    // A DOCA release whose DKMS package skips the pinned kernel: the strict status check
    // fails the build, naming its task, and no image is written.
    let (result, _) = build(&s, "debian-12-doca-unsupported");
    assert!(!result.status.success(), "{}", stderr(&result));
    let err = stderr(&result);
    assert!(
        err.contains("every DKMS module is installed for the pinned kernel")
            || err.contains("build DOCA's DKMS modules for the pinned kernel"),
        "{err}"
    );
    assert!(!s.out.join("debian-12-doca-unsupported/oci").exists());
    eprintln!(
        "debian-12-doca-unsupported: {}",
        err.lines()
            .filter(|l| l.contains("DKMS"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
}
