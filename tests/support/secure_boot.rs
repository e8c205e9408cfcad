//! Booting under Secure Boot in the end-to-end tests: the firmware and loaders a boot reads,
//! a signed module taken from an image and its unsigned copy as an overlay, and
//! `imgbuild boot --secure-boot` once per image, boot code, firmware and inputs (a TCG boot
//! costs minutes; its report is kept in the test cache and read back when warm).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use super::boot_record::boot_record_keyed;
use super::common::{imgbuild, repo_root, stderr, stdout};

/// What the boot starts from (boot::secure_boot's files; the report lists them, checked below).
pub const BOOT_FILES: [&str; 4] = [
    "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd",
    "/usr/share/OVMF/OVMF_VARS_4M.ms.fd",
    "/usr/lib/shim/shimx64.efi.signed",
    "/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed",
];
const MAGIC: &[u8] = b"~Module signature appended~\n";

/// The first out-of-tree module (`updates/` or `extra/`) whose file name `wanted` accepts in
/// the image's OCI layers, top layer first: its file name and bytes.
pub fn a_signed_module(oci: &Path, wanted: impl Fn(&str) -> bool) -> (String, Vec<u8>) {
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
            let name = path.rsplit('/').next().unwrap_or(&path).to_owned();
            if path.contains("lib/modules/")
                && out_of_tree
                && path.ends_with(".ko")
                && wanted(&name)
            {
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).expect("module");
                return (name, bytes);
            }
        }
    }
    panic!("no such out-of-tree module in {}", oci.display());
}

/// `module` with its appended signature removed (the 12-byte trailer before the magic ends with
/// the signature's length, big-endian), as an unsigned build leaves it.
pub fn strip_signature(module: &[u8]) -> Vec<u8> {
    assert!(module.ends_with(MAGIC), "the module is signed");
    let trailer = module.len() - MAGIC.len();
    let length = u32::from_be_bytes(module[trailer - 4..trailer].try_into().expect("4 bytes"));
    let stripped = module[..trailer - 12 - length as usize].to_vec();
    assert!(!stripped.ends_with(MAGIC) && stripped.starts_with(b"\x7fELF"));
    stripped
}

/// `unsigned` signed with the key and certificate in `key_dir` (`key.pem`, `cert.pem`) as the
/// kernel's sign-file signs (a detached PKCS#7 of the module, without attributes or
/// certificates, then its 12-byte trailer and the magic), checked with the host's kmod: its
/// signer is the certificate's subject `cn`.
#[allow(dead_code)] // e2e_secure_boot alone signs with a key no boot enrolls
pub fn signed_with(unsigned: &[u8], key_dir: &Path, cn: &str, work: &Path) -> Vec<u8> {
    let module = work.join("to-sign.ko");
    let signature = work.join("to-sign.p7s");
    std::fs::write(&module, unsigned).expect("module to sign");
    let out = std::process::Command::new("openssl")
        .args([
            "cms",
            "-sign",
            "-binary",
            "-noattr",
            "-nocerts",
            "-nosmimecap",
        ])
        .args(["-md", "sha256", "-outform", "DER", "-signer"])
        .arg(key_dir.join("cert.pem"))
        .arg("-inkey")
        .arg(key_dir.join("key.pem"))
        .arg("-in")
        .arg(&module)
        .arg("-out")
        .arg(&signature)
        .output()
        .expect("openssl cms");
    assert!(out.status.success(), "{}", stderr(&out));
    let pkcs7 = std::fs::read(&signature).expect("signature");
    let mut signed = unsigned.to_vec();
    signed.extend_from_slice(&pkcs7);
    // struct module_signature: algo, hash, id_type (2: PKCS#7), signer_len, key_id_len, 3 pad
    // bytes, then the signature's length, big-endian.
    signed.extend_from_slice(&[0, 0, 2, 0, 0, 0, 0, 0]);
    signed.extend_from_slice(&u32::try_from(pkcs7.len()).expect("length").to_be_bytes());
    signed.extend_from_slice(MAGIC);
    std::fs::write(&module, &signed).expect("signed module");
    let out = std::process::Command::new("modinfo")
        .args(["-F", "signer"])
        .arg(&module)
        .output()
        .expect("modinfo (kmod)");
    assert_eq!(stdout(&out).trim(), cn, "{}", stderr(&out));
    assert_eq!(strip_signature(&signed), unsigned);
    signed
}

/// An overlay holding the unsigned copy of the module `name` of `kernel`, under another name,
/// where the probe loads it from (under usr/lib: the image's /lib is a link to it, which a
/// folder would replace): the overlay and the copy's module name.
pub fn unsigned_overlay(
    work: &Path,
    kernel: &str,
    name: &str,
    unsigned: &[u8],
) -> (PathBuf, String) {
    let overlay = work.join("unsigned-overlay");
    let extra = overlay.join("usr/lib/modules").join(kernel).join("extra");
    std::fs::create_dir_all(&extra).expect("overlay");
    let copy = format!("unsigned_{}", name.trim_end_matches(".ko"));
    std::fs::write(extra.join(format!("{copy}.ko")), unsigned).expect("unsigned module");
    (overlay, copy)
}

/// Where the report of a Secure Boot boot of `manifest` with `inputs` (certificate, overlay
/// module) is kept: keyed by them, the code that packs and boots the image, and the firmware's
/// files.
pub fn secure_boot_record(manifest: &str, inputs: &[&[u8]]) -> PathBuf {
    let sources = [
        "image/src/boot_record.rs",
        "verify/src/labels.rs",
        "verify/src/signature.rs",
        "imgbuild/src/commands/boot.rs",
    ];
    boot_record_keyed("secure-boots", manifest, &sources, &BOOT_FILES, inputs)
}

/// `imgbuild boot --secure-boot` (under TCG) of the image written to `dir`, with `extra` flags,
/// or its report kept at `record`: its exit code and report.
pub fn secure_boot(image: &str, dir: &Path, record: &Path, extra: &[&str]) -> (i64, Value) {
    if let Ok(bytes) = std::fs::read(record) {
        eprintln!(
            "{image}: booted before with the same inputs: {}",
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
        "{image}: booted under Secure Boot (TCG) in {:.1}s",
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

/// The boot report's check `id`.
pub fn boot_check<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == id))
        .unwrap_or_else(|| panic!("no check {id}: {report:#}"))
}

/// The names of the modules the boot found with `outcome` (loaded, rejected, no_device, ...).
pub fn modules_with<'a>(report: &'a Value, outcome: &str) -> Vec<&'a str> {
    report["findings"]["modules"]
        .as_array()
        .expect("modules")
        .iter()
        .filter(|m| m["outcome"] == outcome)
        .filter_map(|m| m["name"].as_str())
        .collect()
}

/// Secure Boot was on, the kernel locked down, and it loaded the certificate named `cn`.
pub fn locked_down_with(report: &Value, cn: &str) {
    let sb = &report["findings"]["secure_boot"];
    assert_eq!(sb["variable"], "1", "{report:#}");
    assert_eq!(sb["kernel_says"], "secureboot: Secure boot enabled");
    assert_eq!(sb["lockdown"], "integrity", "{report:#}");
    let keys = sb["keys"].to_string();
    assert!(
        keys.contains(&format!("Loaded X.509 cert '{cn}: ")),
        "{keys}"
    );
    assert_eq!(boot_check(report, "secure_boot")["ok"], true, "{report:#}");
    assert_eq!(boot_check(report, "mok_loaded")["ok"], true, "{report:#}");
    assert_eq!(boot_check(report, "pinned_kernel_runs")["ok"], true);
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

/// The copies named `copies` (and no other module) were refused for their signature, so the
/// boot failed (exit 1).
pub fn refused_for_signature(report: &Value, code: i64, copies: &[&str]) {
    let mut rejected = modules_with(report, "rejected");
    rejected.sort_unstable();
    let mut expected = copies.to_vec();
    expected.sort_unstable();
    assert_eq!(rejected, expected, "{report:#}");
    for copy in copies {
        let refused = report["findings"]["modules"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["name"] == *copy))
            .expect("the refused copy");
        assert!(
            refused["message"]
                .to_string()
                .contains("Key was rejected by service"),
            "{refused:#}"
        );
    }
    let load = boot_check(report, "modules_load");
    assert_eq!(load["ok"], false);
    assert!(
        load["detail"]
            .to_string()
            .contains("refused for its signature"),
        "{load:#}"
    );
    assert_eq!(code, 1, "a refused module fails the boot");
}

/// What a compute image is to show under Secure Boot.
#[allow(dead_code)] // e2e_secure_boot boots a DOCA image, not a compute one
pub struct ComputeBoot<'a> {
    /// The image's name, and the folder its build wrote (`oci/` inside).
    pub image: &'a str,
    pub dir: &'a Path,
    /// Its manifest digest (the boot record's key).
    pub manifest: &'a str,
    /// A scratch folder for the overlay.
    pub work: &'a Path,
    /// The site's key folder (`cert.pem`) and its certificate's subject.
    pub site: &'a Path,
    pub signer: &'a str,
    pub kernel: &'a str,
    /// MOFED's modules that must load, and the NVIDIA modules, sorted, that the kernel takes
    /// and their own init then refuses for want of a GPU.
    pub mofed_loaded: &'a [&'a str],
    pub nvidia: &'a [&'a str],
}

/// Boots `boot.image` under Secure Boot with the site's certificate (the image's label)
/// enrolled and an unsigned copy of MOFED's mlx_compat as an overlay: locked down, every MOFED
/// module loaded, every NVIDIA module past its signature check, openibd active, no unit failed,
/// the unsigned copy refused. This one boot shows all that a plain TCG boot would.
#[allow(dead_code)] // e2e_secure_boot boots a DOCA image, not a compute one
pub fn compute_boots_signed(boot: &ComputeBoot) {
    let (name, signed) = a_signed_module(&boot.dir.join("oci"), |name| name == "mlx_compat.ko");
    let (overlay, unsigned) =
        unsigned_overlay(boot.work, boot.kernel, &name, &strip_signature(&signed));
    let overlay = overlay.to_string_lossy().into_owned();
    let cert = std::fs::read(boot.site.join("cert.pem")).expect("site cert");
    let record = secure_boot_record(boot.manifest, &[&cert, &signed, b"overlay"]);
    let (code, report) = secure_boot(boot.image, boot.dir, &record, &["--overlay", &overlay]);
    locked_down_with(&report, boot.signer);
    assert_eq!(report["findings"]["kernel"], boot.kernel, "{report:#}");
    let loaded = modules_with(&report, "loaded");
    for module in boot.mofed_loaded {
        assert!(loaded.contains(module), "{module}: {report:#}");
    }
    let mut no_device = modules_with(&report, "no_device");
    no_device.sort_unstable();
    assert_eq!(
        no_device, boot.nvidia,
        "each NVIDIA module passed its signature check: {report:#}"
    );
    assert_eq!(report["findings"]["openibd"][1], "active", "{report:#}");
    assert_eq!(
        boot_check(&report, "units_started")["ok"],
        true,
        "{report:#}"
    );
    refused_for_signature(&report, code, &[&unsigned]);
    eprintln!(
        "{}: under Secure Boot, {} signed modules loaded, {} NVIDIA modules taken and then found no GPU, {unsigned} refused",
        boot.image,
        loaded.len(),
        no_device.len()
    );
}
