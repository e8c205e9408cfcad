//! debian-12-compute signed with the site's key and booted under Secure Boot (issue 32's "done
//! when"): the recipe as it is, built with `--secret id=module-signing,src=DIR` (e2e_signing's
//! throwaway key) on e2e_debian's layer cache (the layers below mofed are the unsigned build's).
//! verify finds every MOFED and NVIDIA module signed by the site's certificate; `imgbuild boot
//! --secure-boot` (Debian's Secure Boot OVMF, shim, Debian's signed GRUB, the certificate from
//! the image's label enrolled as a MOK) boots it locked down: MOFED's signed modules load, the
//! kernel takes each signed NVIDIA module (its own init then finds no GPU: "No such device"),
//! and an unsigned copy of MOFED's mlx_compat, sent as an overlay, is refused in the same boot.
//! The boot's report is kept in the test cache, keyed by the manifest, the boot code, the
//! firmware and the inputs. Needs root, debootstrap, qemu, ovmf, shim-signed,
//! grub-efi-amd64-signed, mtools, dosfstools and the machine's Debian archive, as CI has.

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
use e2e_project::{e2e_project, SIGNED_PORT, STACK_CHECKS};
use secure_boot::{compute_boots_signed, ComputeBoot};
use site_key::site_key;

const IMAGE: &str = "debian-12-compute";
const KERNEL: &str = "6.1.0-50-amd64";
/// The subject of the site's certificate (`site_key("site")`).
const SIGNER: &str = "imgbuild e2e site module signing key";
/// MOFED's modules a boot loads (the stand-in's, under extra/mlnx-ofa_kernel).
const MOFED_LOADED: &[&str] = &["mlx_compat", "ib_core", "mlx5_core", "mlx5_ib", "ib_ipoib"];
/// NVIDIA's proprietary modules, as Debian's nvidia-kernel-dkms names them.
const NVIDIA: &[&str] = &[
    "nvidia-current",
    "nvidia-current-drm",
    "nvidia-current-modeset",
    "nvidia-current-peermem",
    "nvidia-current-uvm",
];

#[test]
fn debian_12_compute_signed_with_the_sites_key_boots_under_secure_boot() {
    let s = e2e_project("imgbuild-e2e-compute-sb-", SIGNED_PORT);
    let site = site_key("site");
    let secret = format!("id=module-signing,src={}", site.display());
    let started = Instant::now();
    let (result, built) = s.build(IMAGE, &["--secret", &secret]);
    assert!(result.status.success(), "{}", stderr(&result));
    eprintln!(
        "{IMAGE} signed: built in {:.1}s (from the cache when warm)",
        started.elapsed().as_secs_f64()
    );
    let verify = &built["verify"];
    assert_eq!(verify["ok"], true, "{verify:#}");
    for id in STACK_CHECKS
        .iter()
        .chain(&["nvidia_modules", "modules_signed"])
    {
        assert_eq!(check(verify, id)["ok"], true, "{id}: {verify:#}");
    }
    let signed = check(verify, "modules_signed")["detail"].to_string();
    assert!(
        signed.contains("all 13 out-of-tree modules") && signed.contains(SIGNER),
        "8 MOFED and 5 NVIDIA modules, signed by the site: {signed}"
    );
    eprintln!("{IMAGE}: modules_signed: {signed}");

    compute_boots_signed(&ComputeBoot {
        image: IMAGE,
        dir: &s.out.join(IMAGE),
        manifest: built["manifest"].as_str().expect("manifest"),
        work: s.work.path(),
        site: &site,
        signer: SIGNER,
        kernel: KERNEL,
        mofed_loaded: MOFED_LOADED,
        nvidia: NVIDIA,
    });
}
