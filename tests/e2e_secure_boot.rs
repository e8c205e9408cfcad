//! Module signing proven by booting under Secure Boot (issue 32, part 3): e2e_signing's image
//! (debian-12-doca-dkms, its DKMS modules signed with the throwaway site key, from the layer
//! cache) booted with `imgbuild boot --secure-boot`: Debian's Secure Boot OVMF with Microsoft's
//! keys, shim, Debian's signed GRUB and the image's signed kernel, the site certificate (the
//! image's label) enrolled as a MOK. The kernel is locked down and loads the certificate; every
//! signed module loads; in the same boot two copies of one, sent as an overlay, are refused for
//! their signature: one with its signature stripped, one signed with another key (as the
//! kernel's sign-file signs, read back by the host's kmod), whose certificate is not enrolled.
//! One boot shows both refusals. A TCG boot costs minutes: its report is kept in the test cache
//! keyed by the image's manifest, the code that packs and boots it, the firmware, shim and GRUB
//! files, the certificate and the overlay, and a warm run reads it back.
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
    a_signed_module, boot_check, locked_down_with, modules_with, refused_for_signature,
    secure_boot, secure_boot_record, signed_with, strip_signature, unsigned_overlay,
};
use site_key::site_key;

const IMAGE: &str = "debian-12-doca-dkms";
const KERNEL: &str = "6.1.0-50-amd64";
/// The modules DKMS built and signed (e2e_signing counts them).
const SIGNED: usize = 7;
/// The subjects of the site's certificate and of the other one (`site_key`).
const SITE_CN: &str = "imgbuild e2e site module signing key";
const OTHER_CN: &str = "imgbuild e2e other module signing key";

#[test]
fn signed_modules_load_under_secure_boot_and_unsigned_or_foreign_ones_are_refused() {
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
    let stripped = strip_signature(&signed);
    let (overlay, unsigned) = unsigned_overlay(shared.work.path(), KERNEL, &name, &stripped);
    // The same module signed with another key, whose certificate the boot does not enrol.
    let foreign = signed_with(&stripped, &other, OTHER_CN, shared.work.path());
    let foreign_name = format!("other_{}", name.trim_end_matches(".ko"));
    let extra = overlay.join("usr/lib/modules").join(KERNEL).join("extra");
    std::fs::write(extra.join(format!("{foreign_name}.ko")), &foreign).expect("other-key copy");
    let overlay_arg = overlay.to_string_lossy().into_owned();
    let site_cert = std::fs::read(site.join("cert.pem")).expect("site cert");

    // The site certificate from the image's label, enrolled as the MOK.
    let record = secure_boot_record(
        &manifest,
        &[
            &site_cert,
            &signed,
            &foreign,
            b"overlay: unsigned, other key",
        ],
    );
    let (code, report) = secure_boot(IMAGE, &dir, &record, &["--overlay", &overlay_arg]);
    locked_down_with(&report, SITE_CN);
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
    // Both copies are refused for their signature: the one without, and the one whose signer
    // no enrolled certificate vouches for.
    refused_for_signature(&report, code, &[&unsigned, &foreign_name]);
    drop(shared.work);
}
