//! Module signing proven by booting under Secure Boot (issue 32, part 3): e2e_signing's image
//! (debian-12-doca-dkms, its DKMS modules signed with the throwaway site key, from the layer
//! cache) booted with `imgbuild boot --secure-boot`: Debian's Secure Boot OVMF with Microsoft's
//! keys, shim, Debian's signed GRUB and the image's signed kernel, the site certificate (the
//! image's label) enrolled as a MOK. The kernel is locked down and loads the certificate; every
//! signed module loads; in the same boot a copy of one with its signature stripped, sent as an
//! overlay, is refused for its signature. Booted again with another certificate enrolled, the
//! signed modules are refused. A TCG boot costs minutes: each boot's report is kept in the test
//! cache keyed by the image's manifest, the code that packs and boots it, the firmware, shim
//! and GRUB files, the certificate and the overlay, and a warm run reads it back.
//! Needs root, debootstrap, the machine's Debian archive, qemu, ovmf, shim-signed,
//! grub-efi-amd64-signed, mtools and dosfstools, as CI has.

#[path = "support/boot_record.rs"]
mod boot_record;
mod common;
#[path = "support/e2e_project.rs"]
mod e2e_project;
#[path = "support/secure_boot.rs"]
mod secure_boot;
#[path = "support/site_key.rs"]
mod site_key;

use std::time::Instant;

use common::*;
use e2e_project::{doca_project, SIGNED_PORT};
use secure_boot::{
    a_signed_module, boot_check, locked_down_with, modules_with, secure_boot, secure_boot_record,
    strip_signature, unsigned_overlay, unsigned_refused,
};
use site_key::site_key;

const IMAGE: &str = "debian-12-doca-dkms";
const KERNEL: &str = "6.1.0-50-amd64";
/// The modules DKMS built and signed (e2e_signing counts them).
const SIGNED: usize = 7;

#[test]
fn signed_modules_load_under_secure_boot_and_an_unsigned_one_is_refused() {
    let shared = doca_project(
        "imgbuild-e2e-secure-boot-",
        &["3.2.1:25.10-1.7.1"],
        SIGNED_PORT,
    );
    let site = site_key("site");
    let other = site_key("other");
    let started = Instant::now();
    let secret = format!("id=module-signing,src={}", site.display());
    let (result, built) = shared.build(IMAGE, &["--secret", &secret]);
    assert!(result.status.success(), "{}", stderr(&result));
    let manifest = built["manifest"].as_str().expect("manifest").to_owned();
    eprintln!(
        "build (from the cache when warm): {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let dir = shared.out.join(IMAGE);
    let (name, signed) = a_signed_module(&dir.join("oci"), |_| true);
    let (overlay, unsigned) =
        unsigned_overlay(shared.work.path(), KERNEL, &name, &strip_signature(&signed));
    let overlay_arg = overlay.to_string_lossy().into_owned();
    let site_cert = std::fs::read(site.join("cert.pem")).expect("site cert");

    // The site certificate from the image's label, enrolled as the MOK.
    let record = secure_boot_record(&manifest, &[&site_cert, &signed, b"overlay"]);
    let (code, report) = secure_boot(IMAGE, &dir, &record, &["--overlay", &overlay_arg]);
    locked_down_with(&report, "imgbuild e2e site module signing key");
    assert!(
        boot_check(&report, "mok_loaded")["detail"]
            .to_string()
            .contains("io.imgbuild.module-signer-cert label"),
        "{report:#}"
    );
    let loaded = modules_with(&report, "loaded");
    assert_eq!(
        loaded.len(),
        SIGNED,
        "every signed module loads: {report:#}"
    );
    unsigned_refused(&report, code, &unsigned);

    // Another certificate enrolled: the kernel loads it, and refuses every module signed with
    // the site key.
    let other_cert = other.join("cert.pem");
    let record = secure_boot_record(
        &manifest,
        &[&std::fs::read(&other_cert).expect("cert"), b"other"],
    );
    let other_arg = other_cert.to_string_lossy().into_owned();
    let (code, report) = secure_boot(IMAGE, &dir, &record, &["--mok-cert", &other_arg]);
    locked_down_with(&report, "imgbuild e2e other module signing key");
    assert_eq!(
        modules_with(&report, "rejected").len(),
        SIGNED,
        "{report:#}"
    );
    assert!(modules_with(&report, "loaded").is_empty(), "{report:#}");
    assert_eq!(code, 1);
    drop(shared.work);
}
