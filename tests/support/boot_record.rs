//! A TCG boot costs minutes: the end-to-end tests boot an image once per image and boot code,
//! keeping the boot's report in the test cache, so a warm run reads it back while a changed
//! image or changed code boots again.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use super::common::{imgbuild, repo_root, stderr, stdout, test_cache};

/// Where the boot's report of the image `manifest` is kept, in `test_cache()/<folder>`, keyed
/// by the manifest and the code a boot runs: the boot crate (packing, the probe, QEMU) and what
/// it reads the image with (the OCI layout reader, the layer applier and the rootfs it writes
/// through).
#[allow(dead_code)] // e2e_secure_boot keys its boots only
pub fn boot_record(folder: &str, manifest: &str) -> PathBuf {
    boot_record_keyed(folder, manifest, &[], &[], &[])
}

/// [`boot_record`] keyed by more: `sources` (more of the repository's crates' files, relative
/// to `crates/`), `machine_files` (files of the machine the boot reads, such as firmware) and
/// `inputs` (bytes the test gives the boot).
pub fn boot_record_keyed(
    folder: &str,
    manifest: &str,
    sources: &[&str],
    machine_files: &[&str],
    inputs: &[&[u8]],
) -> PathBuf {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    digest.update(manifest);
    let crates = repo_root().join("crates");
    let mut files: Vec<PathBuf> = ["boot/src", "oci-layout/src"]
        .iter()
        .flat_map(|dir| {
            std::fs::read_dir(crates.join(dir))
                .expect("boot sources")
                .flatten()
                .map(|e| e.path())
                .filter(|path| path.is_file())
        })
        .chain(
            [
                "image/src/apply.rs",
                "image/src/compression.rs",
                "modules/src/archive.rs",
                "modules/src/rootfs.rs",
            ]
            .iter()
            .chain(sources)
            .map(|file| crates.join(file)),
        )
        // A named file that is not there fails the read below: a moved file must be renamed
        // here, not silently left out of the key.
        .collect();
    files.sort();
    for file in files {
        let name = file.strip_prefix(&crates).unwrap_or(&file);
        digest.update(name.to_string_lossy().as_bytes());
        digest.update(std::fs::read(&file).expect("boot source"));
    }
    for file in machine_files {
        digest.update(file.as_bytes());
        digest.update(std::fs::read(file).expect("a boot input"));
    }
    for input in inputs {
        digest.update(input);
    }
    let key = format!("{:x}", digest.finalize());
    test_cache()
        .join(folder)
        .join(format!("{}.json", &key[..16]))
}

/// The boot's report kept at `record`, or, when there is none, what `boot` returns, kept there.
#[allow(dead_code)] // e2e_secure_boot keys its boots only
pub fn booted_once(record: &Path, image: &str, boot: impl FnOnce() -> Value) -> Value {
    match std::fs::read(record) {
        Ok(bytes) => {
            eprintln!(
                "{image}: booted before, same image and boot code: {}",
                record.display()
            );
            serde_json::from_slice(&bytes).expect("boot record")
        }
        Err(_) => {
            let report = boot();
            std::fs::create_dir_all(record.parent().expect("folder")).expect("boots");
            std::fs::write(record, report.to_string()).expect("record");
            report
        }
    }
}

/// `imgbuild --json boot DIR` of the project `project` under TCG: its report.
#[allow(dead_code)] // e2e_secure_boot keys its boots only
pub fn boot_tcg(project: &Path, dir: &Path, image: &str) -> Value {
    let dir = dir.to_string_lossy().into_owned();
    let started = Instant::now();
    let out = imgbuild(
        project,
        &["--json", "boot", &dir, "--accel", "tcg", "--timeout", "600"],
    );
    let seconds = started.elapsed().as_secs_f64();
    let report: Value = serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("boot: {e}: {}", stderr(&out)));
    eprintln!("{image}: booted under TCG in {seconds:.1}s");
    report
}
