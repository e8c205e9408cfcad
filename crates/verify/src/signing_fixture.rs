//! Modules signed as the kernel's `sign-file` signs them (detached CMS by `openssl cms`,
//! binary, no certificates), with throwaway keys made by `openssl req`: for tests of verify and
//! of what reads its modules (as `modinfo::fake_module` is for modules). Panics on failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::signature::MAGIC;

/// `id_type` of a PKCS#7 signature.
const PKEY_ID_PKCS7: u8 = 2;

/// A throwaway RSA key and its self-signed certificate in `dir`, named `name`.
pub fn signing_key(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let key = dir.join(format!("{name}.key"));
    let cert = dir.join(format!("{name}.pem"));
    let status = Command::new("openssl")
        .args([
            "req", "-new", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", &format!("/CN={name} module signing key")])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl req");
    assert!(status.status.success(), "{status:?}");
    (key, cert)
}

/// `module` with a signature appended by `key`/`cert`, as sign-file appends it.
pub fn sign(module: &[u8], key: &Path, cert: &Path, extra: &[&str]) -> Vec<u8> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("imgbuild-sign-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a signing folder");
    let unsigned = dir.join("module.ko");
    std::fs::write(&unsigned, module).expect("module");
    let sig = dir.join("module.p7s");
    let out = Command::new("openssl")
        .args([
            "cms", "-sign", "-binary", "-nocerts", "-outform", "DER", "-md", "sha256",
        ])
        .args(extra)
        .arg("-in")
        .arg(&unsigned)
        .arg("-signer")
        .arg(cert)
        .arg("-inkey")
        .arg(key)
        .arg("-out")
        .arg(&sig)
        .output()
        .expect("openssl cms");
    assert!(out.status.success(), "{out:?}");
    let pkcs7 = std::fs::read(&sig).expect("signature");
    let _ = std::fs::remove_dir_all(&dir);
    let mut signed = module.to_vec();
    signed.extend_from_slice(&pkcs7);
    signed.extend_from_slice(&[0, 0, PKEY_ID_PKCS7, 0, 0, 0, 0, 0]);
    signed.extend_from_slice(&(pkcs7.len() as u32).to_be_bytes());
    signed.extend_from_slice(MAGIC);
    signed
}
