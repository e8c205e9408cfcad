//! The throwaway module-signing keys the signing tests build with (`--secret
//! id=module-signing,src=DIR`), kept with the layer cache so that a warm run finds the layers
//! they signed.

use std::path::PathBuf;
use std::process::Command;

use super::common::{cache_lock, stderr, test_cache};

/// A key pair in `test_cache()/module-signing/<name>` (made once: the same key run after run
/// keeps the signed layers cached): the secret folder, holding `key.pem` and `cert.pem`,
/// whose subject is `CN=imgbuild e2e <name> module signing key`.
pub fn site_key(name: &str) -> PathBuf {
    let dir = test_cache().join("module-signing").join(name);
    let _lock = cache_lock(&format!("module-signing-{name}"));
    if dir.join("cert.pem").exists() {
        return dir;
    }
    let making = dir.with_extension("tmp");
    let _ = std::fs::remove_dir_all(&making);
    std::fs::create_dir_all(&making).expect("mkdir");
    let out = Command::new("openssl")
        .args(["req", "-new", "-x509", "-newkey", "rsa:2048", "-nodes"])
        .args(["-days", "36500", "-subj"])
        .arg(format!("/CN=imgbuild e2e {name} module signing key"))
        .args(["-keyout", "key.pem", "-out", "cert.pem"])
        .current_dir(&making)
        .output()
        .expect("openssl req");
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::rename(&making, &dir).expect("rename");
    dir
}
