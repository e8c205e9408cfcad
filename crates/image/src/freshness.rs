//! Work a rebuild would redo byte for byte, skipped: verify results kept by manifest digest,
//! and outputs left alone when they were written for the same manifest and are unchanged since.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::hashing::digest_of;

/// The digest of the running program (its rules), read once; its version when unreadable.
fn program_digest() -> &'static str {
    static DIGEST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DIGEST.get_or_init(|| {
        std::env::current_exe()
            .and_then(std::fs::read)
            .map(|bytes| digest_of(&bytes))
            .unwrap_or_else(|_| env!("CARGO_PKG_VERSION").to_owned())
    })
}

/// Verify reports by manifest digest, expectations and program: passed or failed, a report is
/// what the same rules say of the same bytes, so a rebuild of a failing image fails again
/// without reading it.
#[derive(Debug, Clone)]
pub struct VerifyCache {
    dir: PathBuf,
}

impl VerifyCache {
    /// The cache below `cache_dir/verify`.
    pub fn new(cache_dir: &Path) -> Self {
        Self {
            dir: cache_dir.join("verify"),
        }
    }

    fn path(&self, manifest: &str, expect: &verify::Expect) -> PathBuf {
        // The running program is part of the key: a changed rule runs again on old images.
        let key = digest_of(format!("{}\0{manifest}\0{expect:?}", program_digest()).as_bytes());
        self.dir
            .join(format!("{}.json", key.trim_start_matches("sha256:")))
    }

    /// The report of an earlier verify of the same image with the same expectations.
    pub fn get(&self, manifest: &str, expect: &verify::Expect) -> Option<verify::Report> {
        let text = std::fs::read(self.path(manifest, expect)).ok()?;
        serde_json::from_slice::<verify::Report>(&text).ok()
    }

    /// Keeps a report (through a temporary file and a rename).
    pub fn put(
        &self,
        manifest: &str,
        expect: &verify::Expect,
        report: &verify::Report,
    ) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        crate::atomic::write_file(&self.path(manifest, expect), &serde_json::to_vec(report)?)
    }
}

/// What an output was when imgbuild wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    manifest: String,
    size: u64,
    modified_ns: u128,
}

const STAMPS: &str = ".imgbuild-outputs.json";

fn stamp_of(identity: &Path, manifest: &str) -> Option<Stamp> {
    let meta = std::fs::metadata(identity).ok()?;
    let modified = meta.modified().ok()?;
    let modified_ns = modified
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some(Stamp {
        manifest: manifest.to_owned(),
        size: meta.len(),
        modified_ns,
    })
}

fn load(image_dir: &Path) -> BTreeMap<String, Stamp> {
    std::fs::read(image_dir.join(STAMPS))
        .ok()
        .and_then(|t| serde_json::from_slice(&t).ok())
        .unwrap_or_default()
}

fn key(output: &Path) -> String {
    output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether `output` (whose content `identity` stands for: the archive itself, or an OCI
/// layout's `index.json`) was written for `manifest` and has not changed since.
pub fn output_current(image_dir: &Path, output: &Path, identity: &Path, manifest: &str) -> bool {
    match (
        load(image_dir).get(&key(output)),
        stamp_of(identity, manifest),
    ) {
        (Some(recorded), Some(now)) => *recorded == now,
        _ => false,
    }
}

/// Records that `output` was just written for `manifest`.
pub fn record_output(
    image_dir: &Path,
    output: &Path,
    identity: &Path,
    manifest: &str,
) -> std::io::Result<()> {
    let mut stamps = load(image_dir);
    match stamp_of(identity, manifest) {
        Some(stamp) => stamps.insert(key(output), stamp),
        None => stamps.remove(&key(output)),
    };
    crate::atomic::write_file(
        &image_dir.join(STAMPS),
        &serde_json::to_vec_pretty(&stamps)?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_current_until_touched_or_the_manifest_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let archive = dir.path().join("img.tar");
        std::fs::write(&archive, b"one").expect("write");
        assert!(!output_current(dir.path(), &archive, &archive, "sha256:a"));
        record_output(dir.path(), &archive, &archive, "sha256:a").expect("record");
        assert!(output_current(dir.path(), &archive, &archive, "sha256:a"));
        assert!(!output_current(dir.path(), &archive, &archive, "sha256:b"));
        std::fs::write(&archive, b"other").expect("write");
        assert!(!output_current(dir.path(), &archive, &archive, "sha256:a"));
        std::fs::remove_file(&archive).expect("rm");
        assert!(!output_current(dir.path(), &archive, &archive, "sha256:a"));
    }

    #[test]
    fn reports_are_kept_by_manifest_and_expectations_failed_or_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = VerifyCache::new(dir.path());
        let expect = verify::Expect {
            kernel: Some("6.1.0-50-amd64".into()),
            ..verify::Expect::default()
        };
        let failed = verify::Report {
            image: "x".into(),
            kernel: expect.kernel.clone(),
            kernel_source: None,
            ok: false,
            checks: Vec::new(),
            skipped: Vec::new(),
            modules: Vec::new(),
        };
        assert!(cache.get("sha256:m", &expect).is_none());
        cache.put("sha256:m", &expect, &failed).expect("put");
        assert_eq!(cache.get("sha256:m", &expect), Some(failed.clone()));
        let passed = verify::Report { ok: true, ..failed };
        cache.put("sha256:n", &expect, &passed).expect("put");
        assert_eq!(cache.get("sha256:n", &expect), Some(passed));
        assert_ne!(cache.get("sha256:m", &expect).map(|r| r.ok), Some(true));
        let other = verify::Expect {
            initramfs: true,
            ..expect
        };
        assert!(cache.get("sha256:m", &other).is_none());
    }
}
