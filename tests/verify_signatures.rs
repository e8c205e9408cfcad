//! `imgbuild verify --signer-cert`: a rootfs whose out-of-tree modules are signed as the
//! kernel's `sign-file` signs them (by `openssl cms`, with keys made here at test time) passes
//! with its certificate, fails with another naming each module, and a file that is no
//! certificate is refused before the image is read (exit 2).

use crate::common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::Value;

const K: &str = "6.1.0-50-amd64";

fn openssl(args: &[&str], dir: &Path) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", stderr(&out));
}

fn key(dir: &Path, name: &str) {
    openssl(
        &[
            "req",
            "-new",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={name}"),
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.pem"),
        ],
        dir,
    );
}

/// A module file signed by `name`'s key: the module, the detached PKCS#7, the
/// `struct module_signature` and the magic.
fn signed_module(dir: &Path, module: &str, name: &str) -> Vec<u8> {
    let vermagic = format!("{K} SMP preempt mod_unload modversions");
    let bytes = verify::modinfo::fake_module(&[("name", module), ("vermagic", &vermagic)]);
    std::fs::write(dir.join("unsigned.ko"), &bytes).expect("module");
    openssl(
        &[
            "cms",
            "-sign",
            "-binary",
            "-noattr",
            "-nocerts",
            "-outform",
            "DER",
            "-md",
            "sha256",
            "-in",
            "unsigned.ko",
            "-signer",
            &format!("{name}.pem"),
            "-inkey",
            &format!("{name}.key"),
            "-out",
            "sig.p7s",
        ],
        dir,
    );
    let pkcs7 = std::fs::read(dir.join("sig.p7s")).expect("signature");
    let mut out = bytes;
    out.extend_from_slice(&pkcs7);
    out.extend_from_slice(&[0, 0, 2, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&(pkcs7.len() as u32).to_be_bytes());
    out.extend_from_slice(b"~Module signature appended~\n");
    out
}

fn verify_with(dir: &Path, cert: &str) -> (Option<i32>, String, String) {
    let rootfs = dir.join("rootfs").to_string_lossy().into_owned();
    let cert = dir.join(cert).to_string_lossy().into_owned();
    let out = imgbuild(dir, &["--json", "verify", &rootfs, "--signer-cert", &cert]);
    (out.status.code(), stdout(&out), stderr(&out))
}

fn signed_check(json: &str) -> Value {
    let report: Value = serde_json::from_str(json.trim()).expect("a JSON report");
    report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == "modules_signed"))
        .cloned()
        .unwrap_or_else(|| panic!("modules_signed ran: {report:#}"))
}

#[test]
fn verify_checks_each_modules_signature_against_the_sites_certificate() {
    let work = tempfile::tempdir().expect("tempdir");
    let dir = work.path();
    key(dir, "site");
    key(dir, "other");
    let root = dir.join("rootfs");
    let modules = root.join(format!("lib/modules/{K}/updates/dkms"));
    std::fs::create_dir_all(&modules).expect("modules");
    std::fs::create_dir_all(root.join("boot")).expect("boot");
    std::fs::create_dir_all(root.join("etc")).expect("etc");
    std::fs::write(root.join(format!("boot/vmlinuz-{K}")), "kernel").expect("kernel");
    for name in ["mlx5_core", "nvidia"] {
        let bytes = signed_module(dir, name, "site");
        std::fs::write(modules.join(format!("{name}.ko")), bytes).expect("module");
    }

    let (_, json, err) = verify_with(dir, "site.pem");
    let check = signed_check(&json);
    assert_eq!(check["ok"], true, "{check:#} {err}");
    assert!(check["detail"]
        .as_str()
        .is_some_and(|d| d.contains("all 2 out-of-tree modules")));

    let (code, json, _) = verify_with(dir, "other.pem");
    assert_eq!(code, Some(1));
    let check = signed_check(&json);
    assert_eq!(check["ok"], false);
    let detail = check["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("2 signed by another key")
            && detail.contains("updates/dkms/nvidia.ko (signed by CN=site"),
        "{detail}"
    );

    let (code, _, err) = verify_with(dir, "site.key");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--signer-cert") && err.contains("not its private key"),
        "{err}"
    );
}
