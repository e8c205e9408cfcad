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
#[path = "support/site_key.rs"]
mod site_key;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use boot_record::boot_record_keyed;
use common::*;
use e2e_project::doca_project;
use serde_json::Value;
use site_key::site_key;

const IMAGE: &str = "debian-12-doca-dkms";
const KERNEL: &str = "6.1.0-50-amd64";
/// The modules DKMS built and signed (e2e_signing counts them).
const SIGNED: usize = 7;
/// What the boot starts from (boot::secure_boot's files; the report lists them, checked below).
const BOOT_FILES: [&str; 4] = [
    "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd",
    "/usr/share/OVMF/OVMF_VARS_4M.ms.fd",
    "/usr/lib/shim/shimx64.efi.signed",
    "/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed",
];
const MAGIC: &[u8] = b"~Module signature appended~\n";

/// The first out-of-tree module (`updates/` or `extra/`) in the image's OCI layers, top layer
/// first: its file name and bytes.
fn a_signed_module(oci: &Path) -> (String, Vec<u8>) {
    let blob = |digest: &str| {
        oci.join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"))
    };
    let read_json = |path: PathBuf| -> Value {
        serde_json::from_slice(&std::fs::read(path).expect("OCI file")).expect("JSON")
    };
    let index = read_json(oci.join("index.json"));
    let manifest = read_json(blob(
        index["manifests"][0]["digest"].as_str().expect("manifest"),
    ));
    let layers = manifest["layers"].as_array().expect("layers");
    for layer in layers.iter().rev() {
        let file =
            std::fs::File::open(blob(layer["digest"].as_str().expect("digest"))).expect("layer");
        let mut archive = tar::Archive::new(flate2::read::MultiGzDecoder::new(file));
        for entry in archive.entries().expect("tar") {
            let mut entry = entry.expect("entry");
            let path = entry.path().expect("path").to_string_lossy().into_owned();
            let out_of_tree = path.contains("/updates/") || path.contains("/extra/");
            if path.contains("lib/modules/") && out_of_tree && path.ends_with(".ko") {
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).expect("module");
                let name = path.rsplit('/').next().unwrap_or(&path).to_owned();
                return (name, bytes);
            }
        }
    }
    panic!("no out-of-tree module in {}", oci.display());
}

/// `module` with its appended signature removed (the 12-byte trailer before the magic ends with
/// the signature's length, big-endian), as an unsigned build leaves it.
fn strip_signature(module: &[u8]) -> Vec<u8> {
    assert!(module.ends_with(MAGIC), "the module is signed");
    let trailer = module.len() - MAGIC.len();
    let length = u32::from_be_bytes(module[trailer - 4..trailer].try_into().expect("4 bytes"));
    let stripped = module[..trailer - 12 - length as usize].to_vec();
    assert!(!stripped.ends_with(MAGIC) && stripped.starts_with(b"\x7fELF"));
    stripped
}

/// An overlay holding the unsigned copy, under another name, where the probe loads it from
/// (under usr/lib: the image's /lib is a link to it, which a folder would replace).
fn unsigned_overlay(work: &Path, name: &str, unsigned: &[u8]) -> (PathBuf, String) {
    let overlay = work.join("unsigned-overlay");
    let extra = overlay.join("usr/lib/modules").join(KERNEL).join("extra");
    std::fs::create_dir_all(&extra).expect("overlay");
    let copy = format!("unsigned_{}", name.trim_end_matches(".ko"));
    std::fs::write(extra.join(format!("{copy}.ko")), unsigned).expect("unsigned module");
    (overlay, copy)
}

/// Where the report of a boot of `manifest` with `inputs` (certificate, overlay module) is
/// kept: keyed by them, the code that packs and boots the image, and the firmware's files.
fn boot_record(manifest: &str, inputs: &[&[u8]]) -> PathBuf {
    let sources = [
        "image/src/boot_record.rs",
        "verify/src/labels.rs",
        "verify/src/signature.rs",
        "imgbuild/src/commands/boot.rs",
    ];
    boot_record_keyed("secure-boots", manifest, &sources, &BOOT_FILES, inputs)
}

/// `imgbuild boot --secure-boot` (under TCG) with `extra` flags, or its kept report: its exit
/// code and report.
fn secure_boot(dir: &Path, record: &Path, extra: &[&str]) -> (i64, Value) {
    if let Ok(bytes) = std::fs::read(record) {
        eprintln!(
            "{IMAGE}: booted before with the same inputs: {}",
            record.display()
        );
        let kept: Value = serde_json::from_slice(&bytes).expect("kept boot");
        return (kept["code"].as_i64().unwrap_or(-1), kept["report"].clone());
    }
    let dir = dir.to_string_lossy().into_owned();
    let mut args = vec![
        "--json",
        "boot",
        &dir,
        "--accel",
        "tcg",
        "--timeout",
        "900",
        "--secure-boot",
    ];
    args.extend_from_slice(extra);
    let started = Instant::now();
    let out = imgbuild(&repo_root(), &args);
    eprintln!(
        "{IMAGE}: booted under Secure Boot (TCG) in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let report: Value = serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("boot: {e}: {}", stderr(&out)));
    let code = i64::from(out.status.code().unwrap_or(-1));
    std::fs::create_dir_all(record.parent().expect("folder")).expect("boots");
    let kept = serde_json::json!({"code": code, "report": report});
    std::fs::write(record, kept.to_string()).expect("keep the boot");
    (code, report)
}

fn check<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == id))
        .unwrap_or_else(|| panic!("no check {id}: {report:#}"))
}

fn modules<'a>(report: &'a Value, outcome: &str) -> Vec<&'a str> {
    report["findings"]["modules"]
        .as_array()
        .expect("modules")
        .iter()
        .filter(|m| m["outcome"] == outcome)
        .filter_map(|m| m["name"].as_str())
        .collect()
}

/// Secure Boot was on, the kernel locked down, and it loaded the certificate named `cn`.
fn locked_down_with(report: &Value, cn: &str) {
    let sb = &report["findings"]["secure_boot"];
    assert_eq!(sb["variable"], "1", "{report:#}");
    assert_eq!(sb["kernel_says"], "secureboot: Secure boot enabled");
    assert_eq!(sb["lockdown"], "integrity", "{report:#}");
    let keys = sb["keys"].to_string();
    assert!(
        keys.contains(&format!("Loaded X.509 cert '{cn}: ")),
        "{keys}"
    );
    assert_eq!(check(report, "secure_boot")["ok"], true, "{report:#}");
    assert_eq!(check(report, "mok_loaded")["ok"], true, "{report:#}");
    assert_eq!(check(report, "pinned_kernel_runs")["ok"], true);
    let files: Vec<&str> = report["secure_boot"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(
        files, BOOT_FILES,
        "the boot's inputs are the files its record is keyed by"
    );
}

#[test]
fn signed_modules_load_under_secure_boot_and_an_unsigned_one_is_refused() {
    let shared = doca_project("imgbuild-e2e-secure-boot-", &["3.2.1:25.10-1.7.1"]);
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
    let (name, signed) = a_signed_module(&dir.join("oci"));
    let (overlay, unsigned) =
        unsigned_overlay(shared.work.path(), &name, &strip_signature(&signed));
    let overlay_arg = overlay.to_string_lossy().into_owned();
    let site_cert = std::fs::read(site.join("cert.pem")).expect("site cert");

    // The site certificate from the image's label, enrolled as the MOK.
    let record = boot_record(&manifest, &[&site_cert, &signed, b"overlay"]);
    let (code, report) = secure_boot(&dir, &record, &["--overlay", &overlay_arg]);
    locked_down_with(&report, "imgbuild e2e site module signing key");
    assert!(
        check(&report, "mok_loaded")["detail"]
            .to_string()
            .contains("io.imgbuild.module-signer-cert label"),
        "{report:#}"
    );
    let loaded = modules(&report, "loaded");
    assert_eq!(
        loaded.len(),
        SIGNED,
        "every signed module loads: {report:#}"
    );
    assert_eq!(
        modules(&report, "rejected"),
        [unsigned.as_str()],
        "{report:#}"
    );
    let refused = report["findings"]["modules"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["name"] == unsigned.as_str()))
        .expect("the unsigned module");
    assert!(
        refused["message"]
            .to_string()
            .contains("Key was rejected by service"),
        "{refused:#}"
    );
    let load = check(&report, "modules_load");
    assert_eq!(load["ok"], false);
    assert!(
        load["detail"]
            .to_string()
            .contains("refused for its signature"),
        "{load:#}"
    );
    assert_eq!(code, 1, "a refused module fails the boot");

    // Another certificate enrolled: the kernel loads it, and refuses every module signed with
    // the site key.
    let other_cert = other.join("cert.pem");
    let record = boot_record(
        &manifest,
        &[&std::fs::read(&other_cert).expect("cert"), b"other"],
    );
    let other_arg = other_cert.to_string_lossy().into_owned();
    let (code, report) = secure_boot(&dir, &record, &["--mok-cert", &other_arg]);
    locked_down_with(&report, "imgbuild e2e other module signing key");
    assert_eq!(modules(&report, "rejected").len(), SIGNED, "{report:#}");
    assert!(modules(&report, "loaded").is_empty(), "{report:#}");
    assert_eq!(code, 1);
    drop(shared.work);
}
