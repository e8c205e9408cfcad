//! Module signing end to end (issue 32, part 1): debian-12-doca-dkms (e2e_doca's DOCA 3.2
//! stand-in: DKMS packages of small real kbuild modules, on e2e_debian's cached layers) built
//! with `--secret id=module-signing,src=DIR`, DIR holding a throwaway key and certificate made
//! by `openssl req` (kept with the layer cache, so a warm run finds its layers). DKMS signs with
//! it; the build's own verify holds every out-of-tree module to the certificate, and
//! `imgbuild verify` does again from the image's label alone and fails with another
//! certificate. The key's bytes (its PEM body and its DER) are searched for in the build's
//! output, the report, the OCI layout (layers uncompressed) and everything the build wrote to
//! the layer cache: found nowhere. Another key changes the key of the signing role's layer and
//! of those above it only. The same key signs the same modules to the same bytes when the
//! layer is rebuilt from nothing (each time it is not cached yet, or always with
//! IMGBUILD_E2E_SIGNING_REBUILD=1).
//! Needs root, debootstrap and the machine's Debian archive, as CI has.

mod common;
#[path = "support/e2e_project.rs"]
mod e2e_project;
#[path = "support/site_key.rs"]
mod site_key;

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Instant, SystemTime};

use common::*;
use e2e_project::{doca_project, E2eProject, SIGNED_PORT};
use serde_json::Value;
use site_key::site_key;

const IMAGE: &str = "debian-12-doca-dkms";

type Setup = E2eProject;

/// e2e_doca's project, mirror and DOCA stand-in (the DKMS release only), with e2e_debian's
/// layer cache.
fn setup() -> Setup {
    doca_project("imgbuild-e2e-signing-", &["3.2.1:25.10-1.7.1"], SIGNED_PORT)
}

/// The key's private bytes as they could leak: the lines of its PEM body and its DER. Its
/// first 336 bytes (the first 7 lines of PEM) are left out: they hold the version and the
/// public modulus, which the certificate holds too, in its label and the SBOM.
fn needles(secret: &Path) -> Vec<Vec<u8>> {
    let pem = std::fs::read_to_string(secret.join("key.pem")).expect("key");
    let mut found: Vec<Vec<u8>> = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .skip(7)
        .filter(|l| l.len() >= 32)
        .map(|l| l.as_bytes().to_vec())
        .collect();
    assert!(found.len() > 15, "a 2048-bit key's private lines");
    let der = Command::new("openssl")
        .args(["pkey", "-outform", "DER", "-in"])
        .arg(secret.join("key.pem"))
        .output()
        .expect("openssl pkey");
    assert!(der.status.success() && der.stdout.len() > 1000);
    // The whole DER, and 64 bytes of its private exponent alone.
    found.push(der.stdout[400..464].to_vec());
    found.push(der.stdout);
    found
}

fn holds(haystack: &[u8], needles: &[Vec<u8>]) -> bool {
    needles
        .iter()
        .any(|n| memchr::memmem::find(haystack, n).is_some())
}

/// The files below `dir` made since `since` (seconds since 1970; all when None) whose
/// bytes, or whose gzip-uncompressed bytes, hold one of `needles`.
fn leaks(dir: &Path, since: Option<i64>, needles: &[Vec<u8>]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(entry.path());
                continue;
            }
            // The change time: layers' files carry SOURCE_DATE_EPOCH as their modification
            // time, but every file the build made or linked was changed now.
            let recent = since.is_none_or(|s| meta.ctime() >= s);
            if !meta.is_file() || !recent {
                continue;
            }
            let Ok(bytes) = std::fs::read(entry.path()) else {
                continue;
            };
            let mut plain = Vec::new();
            if bytes.starts_with(&[0x1f, 0x8b]) {
                let _ = flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_end(&mut plain);
            }
            if holds(&bytes, needles) || holds(&plain, needles) {
                found.push(entry.path());
            }
        }
    }
    found
}

fn build(s: &Setup, secret: &Path) -> (Output, Value) {
    let secret = format!("id=module-signing,src={}", secret.display());
    let (result, _) = s.build(IMAGE, &["--secret", &secret]);
    let built = built_event(&result);
    (result, built)
}

fn layers(built: &Value) -> Vec<(String, String, bool)> {
    built["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .map(|l| {
            let role = l["role"].as_str().unwrap_or_default().to_owned();
            let digest = l["digest"].as_str().unwrap_or_default().to_owned();
            (role, digest, l["cached"] == true)
        })
        .collect()
}

/// The inputs each role's layer was keyed by in the build that printed `built`, by role (from
/// its own report: the cache's `last` records are shared with e2e_doca's unsigned build of the
/// same image, which may run at the same time in the other lane).
fn inputs(built: &Value) -> Vec<(String, Value)> {
    built["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .filter(|l| l["role"] != "base")
        .map(|l| {
            let role = l["role"].as_str().unwrap_or_default().to_owned();
            (role, l["inputs"].clone())
        })
        .collect()
}

fn verify_image(s: &Setup, extra: &[&str]) -> (Output, Value) {
    let oci = s.out.join(IMAGE).join("oci");
    let oci = oci.to_string_lossy().into_owned();
    let mut args = vec!["--json", "verify", oci.as_str()];
    args.extend_from_slice(extra);
    let result = imgbuild(&s.project, &args);
    let report = serde_json::from_str(stdout(&result).trim()).unwrap_or(Value::Null);
    (result, report)
}

/// The `.ko` files (with their signatures) of the cached layer `digest`, by name.
fn signed_modules(s: &Setup, digest: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
    s.layer_modules(digest)
        .into_iter()
        .map(|(name, path)| (name, std::fs::read(&path).expect("module")))
        .collect()
}

/// Drops the cached layers of `digests` (their `layers/<key>` folders), so the next build
/// makes them from nothing.
fn forget(s: &Setup, digests: &[&str]) {
    for layer in digests.iter().flat_map(|d| s.cached_layers(d)) {
        std::fs::remove_dir_all(layer).expect("forget a layer");
    }
}

#[test]
fn modules_are_signed_with_the_sites_key_which_stays_out_of_everything_the_build_keeps() {
    let s = setup();
    let site = site_key("site");
    let other = site_key("other");
    let since = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64 - 2);

    let started = Instant::now();
    let (result, built) = build(&s, &site);
    eprintln!("signed build: {:.1}s", started.elapsed().as_secs_f64());
    let verify = &built["verify"];
    assert_eq!(verify["ok"], true, "{verify:#}");
    let signed = check(verify, "modules_signed");
    assert_eq!(signed["ok"], true, "{signed:#}");
    let detail = signed["detail"].to_string();
    assert!(
        detail.contains("all 7 out-of-tree modules") && detail.contains("imgbuild e2e site"),
        "{detail}"
    );
    assert_eq!(check(verify, "no_private_keys")["ok"], true);
    let first = layers(&built);
    let fresh = first
        .iter()
        .any(|(role, _, cached)| role == "mofed" && !cached);

    // The image's label names the signer: verify checks it from the image alone, and fails
    // with another certificate, naming the modules.
    let (alone, report) = verify_image(&s, &[]);
    assert!(alone.status.success(), "{}", stdout(&alone));
    assert_eq!(check(&report, "modules_signed")["ok"], true);
    let other_cert = other.join("cert.pem").to_string_lossy().into_owned();
    let (wrong, report) = verify_image(&s, &["--signer-cert", &other_cert]);
    assert_eq!(wrong.status.code(), Some(1), "{}", stdout(&wrong));
    let failed = check(&report, "modules_signed");
    assert_eq!(failed["ok"], false);
    assert!(
        failed["detail"]
            .to_string()
            .contains("7 signed by another key"),
        "{failed:#}"
    );

    // The key is nowhere: output, report, image, or what the build wrote to the cache.
    let key = needles(&site);
    assert!(!holds(&result.stdout, &key) && !holds(&result.stderr, &key));
    let in_out = leaks(&s.out, None, &key);
    assert!(in_out.is_empty(), "the key is in {in_out:?}");
    let in_cache = leaks(&s.cache, Some(since), &key);
    assert!(in_cache.is_empty(), "the key is in {in_cache:?}");

    // Another key: the signing role's layer and those above it are keyed anew; those below
    // are the same layers.
    let keyed = inputs(&built);
    let (_, other_built) = build(&s, &other);
    let rekeyed = inputs(&other_built);
    assert!(keyed.iter().any(|(role, _)| role == "mofed"), "{keyed:?}");
    assert!(keyed.iter().chain(&rekeyed).all(|(_, i)| i.is_object()));
    for ((role, a), (_, b)) in keyed.iter().zip(&rekeyed) {
        match role.as_str() {
            "mofed" => {
                assert_ne!(a["signer"], b["signer"], "{role}");
                assert!(a["signer"]
                    .as_str()
                    .is_some_and(|f| f.starts_with("sha256:")));
                assert_eq!((&a["parent"], &a["tasks"]), (&b["parent"], &b["tasks"]));
            }
            "openibd" => {
                assert_eq!(a["signer"], Value::Null, "not a signing role");
                assert_ne!(a["parent"], b["parent"], "{role}: mofed's layer is below");
            }
            _ => assert_eq!(a, b, "{role}: below the signing role"),
        }
    }
    let digests = |l: &[(String, String, bool)]| -> Vec<String> {
        l.iter().map(|(_, d, _)| d.clone()).collect()
    };
    let second = digests(&layers(&other_built));
    let below = first.len() - 2;
    assert_eq!(digests(&first)[..below], second[..below]);
    assert_ne!(digests(&first)[below..], second[below..]);

    // The same key signs the same modules to the same bytes, rebuilt from nothing (the layer
    // as a whole is not: apt's and dpkg's logs and DKMS's make.log hold the time of the build,
    // in this layer as in every apt role's), each time the signed layer was not cached yet (a
    // warm run builds twice, both from the cache: a few minutes less of CI's budget).
    if fresh || std::env::var_os("IMGBUILD_E2E_SIGNING_REBUILD").is_some() {
        let made: Vec<&str> = first[below..].iter().map(|(_, d, _)| d.as_str()).collect();
        let modules = signed_modules(&s, made[0]);
        assert_eq!(modules.len(), 7, "{:?}", modules.keys());
        forget(&s, &made);
        let started = Instant::now();
        let (_, again) = build(&s, &site);
        eprintln!("signed rebuild: {:.1}s", started.elapsed().as_secs_f64());
        let rebuilt = layers(&again);
        assert!(rebuilt.iter().any(|(r, _, cached)| r == "mofed" && !cached));
        assert_eq!(signed_modules(&s, &rebuilt[below].1), modules);
    }
    drop(s.work);
}
