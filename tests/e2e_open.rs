//! NVIDIA's open kernel modules end to end (issue 33), signed with the site's key (issue 32,
//! part 1): debian-12-compute-open (debian-12-compute's roles and variables with
//! `nvidia_kernel_flavor: open`) built with `--secret id=module-signing,src=DIR` and
//! e2e_signing's throwaway key, on e2e_debian's layer cache (the roles below mofed are keyed as
//! debian-12-compute's, so their layers are shared). Debian's `nvidia-open-kernel-dkms` is
//! compiled by DKMS for the pinned kernel after MOFED's stand-in, and DKMS signs its modules
//! with the site's key (the mofed role signs MOFED's with the kernel's sign-file). The build's
//! verify finds the open flavour, one driver version, every MOFED and NVIDIA module signed by
//! the site's certificate and nvidia-peermem on MOFED's `ib_core`; the host's kmod reads the
//! same from the modules themselves (licence, signer, and peermem's symbol version of MOFED's
//! `ib_register_peer_memory_client`, as in MOFED's `Module.symvers`). The image boots under
//! Secure Boot (TCG, once per image and boot code) with the site's certificate enrolled:
//! MOFED's modules load, the kernel takes each open NVIDIA module, whose init then finds no GPU
//! (a VM has none, so nvidia, and peermem above it, end with "No such device"), openibd runs,
//! and an unsigned module is refused (issue 32, part 3, on debian-12-compute's recipe). One
//! boot shows what a plain boot would and more, so there is no plain boot. A second build is
//! served from the cache.
//! Needs root, debootstrap, qemu, ovmf, shim-signed, grub-efi-amd64-signed, mtools, dosfstools
//! and the machine's Debian archive, as CI has.

// secure_boot keeps its boot records with boot_record's.
#[path = "support/boot_record.rs"]
#[allow(dead_code)]
mod boot_record;
mod common;
#[path = "support/e2e_project.rs"]
mod e2e_project;
#[path = "support/layer_trees.rs"]
mod layer_trees;
#[path = "support/secure_boot.rs"]
mod secure_boot;
#[path = "support/site_key.rs"]
mod site_key;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::*;
use e2e_project::{e2e_project, E2eProject, SIGNED_PORT, STACK_CHECKS};
use layer_trees::roles_whose_layer_holds;
use secure_boot::{compute_boots_signed, ComputeBoot};
use serde_json::Value;
use site_key::site_key;

const IMAGE: &str = "debian-12-compute-open";
const KERNEL: &str = "6.1.0-50-amd64";
/// The subject of the site's certificate (`site_key("site")`).
const SIGNER: &str = "imgbuild e2e site module signing key";
/// The roles below mofed, whose layers are debian-12-compute's.
const SHARED: &[&str] = &[
    "common/bootstrap",
    "create_repos",
    "create_users",
    "packages",
    "kernel",
    "mkdisk",
    "munge",
    "sssd",
];
/// The modules Debian's nvidia-open-kernel-dkms installs, renamed by its dkms.conf.
const OPEN_MODULES: &[&str] = &[
    "nvidia-current-open",
    "nvidia-current-open-modeset",
    "nvidia-current-open-drm",
    "nvidia-current-open-uvm",
    "nvidia-current-open-peermem",
];
/// MOFED's modules a boot loads (the stand-in's, under extra/mlnx-ofa_kernel).
const MOFED_LOADED: &[&str] = &["mlx_compat", "ib_core", "mlx5_core", "mlx5_ib", "ib_ipoib"];

fn build(s: &E2eProject, secret: &Path) -> (Value, f64) {
    let secret = format!("id=module-signing,src={}", secret.display());
    let started = Instant::now();
    let (result, _) = s.build(IMAGE, &["--secret", &secret]);
    let seconds = started.elapsed().as_secs_f64();
    (built_event(&result), seconds)
}

/// The digest of `role`'s layer in a `built` event.
fn layer_of<'a>(built: &'a Value, role: &str) -> &'a str {
    built["layers"]
        .as_array()
        .and_then(|l| l.iter().find(|l| l["role"] == role))
        .and_then(|l| l["digest"].as_str())
        .unwrap_or_else(|| panic!("no {role} layer: {built:#}"))
}

/// The roles whose layers this build made (not from the cache).
fn made(built: &Value) -> Vec<String> {
    built["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .filter(|l| l["cached"] != true)
        .filter_map(|l| l["role"].as_str().map(str::to_owned))
        .collect()
}

/// The build's verify: the open flavour of one driver version, every MOFED and NVIDIA module
/// signed by the site's certificate, nvidia-peermem built on MOFED's ib_core.
fn verified_open_and_signed(verify: &Value) {
    assert_eq!(verify["ok"], true, "{verify:#}");
    let nvidia = [
        "nvidia_modules",
        "nvidia_kernel_flavor",
        "nvidia_version",
        "nvidia_versions_match",
        "peermem_after_mofed",
        "modules_signed",
        "initramfs",
        "no_build_tools",
    ];
    for id in STACK_CHECKS.iter().chain(&nvidia) {
        assert_eq!(check(verify, id)["ok"], true, "{id}: {verify:#}");
    }
    let detail = |id: &str| check(verify, id)["detail"].to_string();
    let flavor = detail("nvidia_kernel_flavor");
    assert!(
        flavor.contains(
            "/updates/dkms/nvidia-current-open.ko is the open flavour (licence Dual MIT/GPL)"
        ),
        "{flavor}"
    );
    assert!(detail("nvidia_version").contains("is driver 535.261.03"));
    let signed = detail("modules_signed");
    assert!(
        signed.contains("all 13 out-of-tree modules") && signed.contains(SIGNER),
        "8 MOFED and 5 NVIDIA modules: {signed}"
    );
    eprintln!("{IMAGE}: nvidia_kernel_flavor: {flavor}");
    eprintln!(
        "{IMAGE}: nvidia_versions_match: {}",
        detail("nvidia_versions_match")
    );
    eprintln!("{IMAGE}: modules_signed: {signed}");
    eprintln!(
        "{IMAGE}: peermem_after_mofed: {}",
        detail("peermem_after_mofed")
    );
    let modules = verify["modules"].as_array().expect("modules");
    let path_of = |name: &str| format!("/lib/modules/{KERNEL}/updates/dkms/{name}.ko");
    for name in OPEN_MODULES {
        let module = modules
            .iter()
            .find(|m| m["path"] == path_of(name))
            .unwrap_or_else(|| panic!("no {name}.ko: {modules:#?}"));
        assert!(module["vermagic"]
            .as_str()
            .is_some_and(|v| v.starts_with(&format!("{KERNEL} "))));
    }
    assert!(
        !modules
            .iter()
            .any(|m| m["path"] == path_of("nvidia-current")),
        "the proprietary module is not in an open image"
    );
    let peermem = modules
        .iter()
        .find(|m| m["path"] == path_of("nvidia-current-open-peermem"))
        .expect("peermem");
    let depends = peermem["depends"].to_string();
    assert!(
        depends.contains("\"ib_core\"") && depends.contains("\"nvidia\""),
        "{peermem}"
    );
}

/// The host's `modinfo -F field FILE`.
fn modinfo(field: &str, file: &Path) -> String {
    let out = Command::new("modinfo")
        .args(["-F", field])
        .arg(file)
        .output()
        .expect("modinfo (kmod)");
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).trim().to_owned()
}

/// The symbol version `symbol` has in the `modprobe --dump-modversions` of `module`, or in the
/// `Module.symvers` file `symvers`.
fn crc(symbol: &str, module: Option<&Path>, symvers: Option<&Path>) -> Option<String> {
    let text = match (module, symvers) {
        (Some(module), _) => {
            let out = Command::new("modprobe")
                .arg("--dump-modversions")
                .arg(module)
                .output()
                .expect("modprobe (kmod)");
            stdout(&out)
        }
        (None, Some(file)) => std::fs::read_to_string(file).expect("Module.symvers"),
        (None, None) => return None,
    };
    text.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        let (crc, name) = (words.next()?, words.next()?);
        (name == symbol).then(|| {
            crc.trim_start_matches("0x")
                .trim_start_matches('0')
                .to_owned()
        })
    })
}

/// The modules as the nvidia layer holds them, read by the host's kmod: NVIDIA's open licence,
/// the site's signature on each (MOFED's too), and nvidia-peermem's symbol version of
/// `ib_register_peer_memory_client`, MOFED's own (the inbox ib_core has no such symbol).
fn the_modules_say_so_themselves(s: &E2eProject, built: &Value) {
    let nvidia = s.layer_modules(layer_of(built, "nvidia"));
    for name in OPEN_MODULES {
        let file = nvidia
            .get(&format!("{name}.ko"))
            .unwrap_or_else(|| panic!("{name}.ko not in the nvidia layer: {nvidia:?}"));
        // NVIDIA's open modules are MIT/GPL; nvidia-peermem (peer-memory code) is BSD/GPL.
        let licence = if name.ends_with("peermem") {
            "Dual BSD/GPL"
        } else {
            "Dual MIT/GPL"
        };
        assert_eq!(modinfo("license", file), licence, "{name}");
        assert_eq!(modinfo("signer", file), SIGNER, "{name}");
    }
    let mofed = s.layer_modules(layer_of(built, "mofed"));
    assert_eq!(mofed.len(), 8, "{:?}", mofed.keys());
    for (name, file) in &mofed {
        assert_eq!(modinfo("signer", file), SIGNER, "{name}");
    }
    let peermem = &nvidia["nvidia-current-open-peermem.ko"];
    let symvers: PathBuf = s
        .cached_layers(layer_of(built, "mofed"))
        .iter()
        .map(|layer| {
            layer.join(format!(
                "tree/usr/src/ofa_kernel/x86_64/{KERNEL}/Module.symvers"
            ))
        })
        .find(|file| file.is_file())
        .expect("MOFED's Module.symvers in the mofed layer");
    let symbol = "ib_register_peer_memory_client";
    let linked = crc(symbol, Some(peermem), None);
    assert!(linked.is_some(), "nvidia-peermem does not call {symbol}");
    assert_eq!(
        linked,
        crc(symbol, None, Some(&symvers)),
        "{symbol}'s version"
    );
    eprintln!(
        "{IMAGE}: nvidia-current-open-peermem links {symbol} at MOFED's version 0x{}; 13 modules signed by {SIGNER} (host modinfo)",
        linked.unwrap_or_default()
    );
}

/// The roles below mofed are keyed as debian-12-compute's were in its last build with this
/// cache (the same layers), when e2e_debian has built it here.
fn shared_with_debian_12_compute(s: &E2eProject) {
    let compute = s.last_inputs("debian-12-compute");
    if compute.is_empty() {
        eprintln!("{IMAGE}: debian-12-compute was never built with this cache: nothing to compare");
        return;
    }
    let open = s.last_inputs(IMAGE);
    for role in SHARED {
        let file = format!("{}.json", role.replace('/', "_"));
        let find = |records: &[(String, Value)]| {
            records
                .iter()
                .find(|(name, _)| *name == file)
                .map(|(_, inputs)| inputs.clone())
                .unwrap_or_else(|| panic!("no record {file}"))
        };
        assert_eq!(
            find(&open),
            find(&compute),
            "{role}: not debian-12-compute's layer"
        );
    }
    let mofed = |records: &[(String, Value)]| {
        records
            .iter()
            .find(|(name, _)| name == "mofed.json")
            .map(|(_, inputs)| inputs["signer"].clone())
    };
    let signer = mofed(&open).expect("the open image's mofed record");
    assert!(signer.as_str().is_some_and(|f| f.starts_with("sha256:")));
    // debian-12-compute's last build here is e2e_debian's (unsigned) or, when
    // e2e_compute_secure_boot ran after it, the one signed with this same site key.
    let compute = mofed(&compute).expect("debian-12-compute's mofed record");
    assert!(
        compute.is_null() || compute == signer,
        "debian-12-compute's mofed layer: signer {compute}, the site's {signer}"
    );
}

/// Under Secure Boot (shim, Debian's signed GRUB, the kernel locked down) with the site's
/// certificate, from the image's label, enrolled as a MOK: every MOFED module loads, the kernel
/// takes every NVIDIA module (each is refused by its own init, for want of a GPU, never for its
/// signature), and in the same boot an unsigned copy of MOFED's mlx_compat is refused.
fn booted_under_secure_boot(s: &E2eProject, manifest: &str, site: &Path) {
    let mut open = OPEN_MODULES.to_vec();
    open.sort_unstable();
    compute_boots_signed(&ComputeBoot {
        image: IMAGE,
        dir: &s.out.join(IMAGE),
        manifest,
        work: s.work.path(),
        site,
        signer: SIGNER,
        kernel: KERNEL,
        mofed_loaded: MOFED_LOADED,
        nvidia: &open,
    });
}

#[test]
fn open_nvidia_modules_signed_with_the_sites_key_verify_and_boot_on_mofeds_ib_core() {
    let s = e2e_project("imgbuild-e2e-open-", SIGNED_PORT);
    let site = site_key("site");

    let (built, first) = build(&s, &site);
    eprintln!(
        "{IMAGE}: first build {first:.1}s, layers made (not cached): {:?}",
        made(&built)
    );
    verified_open_and_signed(&built["verify"]);
    the_modules_say_so_themselves(&s, &built);
    // One initramfs: the kernel's, NVIDIA's and dracut's installation hooks deferred theirs,
    // and the dracut role's own build is the only one in any layer.
    let initrd = format!("boot/initrd.img-{KERNEL}");
    assert_eq!(
        roles_whose_layer_holds(&s.cache, &built, &initrd),
        ["dracut"],
        "the layers that hold {initrd}"
    );
    shared_with_debian_12_compute(&s);

    let manifest = built["manifest"].as_str().expect("manifest");
    let started = Instant::now();
    booted_under_secure_boot(&s, manifest, &site);
    let booting = started.elapsed().as_secs_f64();

    let (again, second) = build(&s, &site);
    assert_eq!(again["manifest"], built["manifest"]);
    assert_eq!(made(&again), Vec::<String>::new(), "{again:#}");
    eprintln!("{IMAGE}: first build {first:.1}s, boot {booting:.1}s, second build {second:.1}s");
}
