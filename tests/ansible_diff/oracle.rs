//! The oracle's runs kept between test runs: what `ansible-playbook` left for one case (its
//! overlay upper folder, its exit status and output), in the test cache, keyed by everything the
//! run reads: the harness's fixtures and the repository it serves, the rootfs it starts from,
//! the case's name and mirror, how the harness runs Ansible (`runs.rs`), the versions of
//! ansible, ansible-core and Python, and the host's kernel (Ansible's `ansible_kernel` fact).
//! A change to any of them runs Ansible again; only runs that end well are kept. imgbuild's
//! side runs every time. `IMGBUILD_ORACLE_CACHE=0` runs Ansible every time too.

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output};

use sha2::{Digest, Sha256};

/// The kept runs of one harness, and what every case's key shares.
pub struct Oracle {
    dir: PathBuf,
    identity: Vec<u8>,
}

/// A kept run: the folder holding what it wrote, and what it printed.
pub struct Kept {
    pub upper: PathBuf,
    pub output: Output,
}

impl Oracle {
    /// The kept runs of the harness `label` whose cases read `inputs` (folders) and start from
    /// `lower`; none when `IMGBUILD_ORACLE_CACHE=0`.
    pub fn new(label: &str, inputs: &[&Path], lower: &Path) -> Option<Oracle> {
        if std::env::var_os("IMGBUILD_ORACLE_CACHE").is_some_and(|v| v == "0") {
            return None;
        }
        let mut identity = Sha256::new();
        identity.update(format!("oracle 1 {label}\n"));
        identity.update(include_str!("runs.rs"));
        for input in inputs {
            hash_tree(&mut identity, input, input);
        }
        let root = std::fs::metadata(lower).expect("the rootfs");
        identity.update(format!(
            "lower {} {} {}\n",
            root.ino(),
            root.ctime(),
            root.ctime_nsec()
        ));
        for file in ["var/lib/dpkg/status", "var/lib/rpm/rpmdb.sqlite"] {
            identity.update(std::fs::read(lower.join(file)).unwrap_or_default());
        }
        let versions = Command::new("dpkg-query")
            .args(["-W", "ansible", "ansible-core", "python3"])
            .output()
            .expect("dpkg-query");
        identity.update(&versions.stdout);
        identity.update(std::fs::read("/proc/sys/kernel/osrelease").unwrap_or_default());
        let dir = crate::common::test_cache().join("oracle").join(label);
        std::fs::create_dir_all(&dir).expect("the oracle's cache");
        Some(Oracle {
            dir,
            identity: identity.finalize().to_vec(),
        })
    }

    fn entry(&self, case: &str, mirror: &str) -> PathBuf {
        let mut key = Sha256::new();
        key.update(&self.identity);
        key.update(format!("{case}\n{mirror}\n"));
        self.dir.join(format!("{case}-{:x}", key.finalize()))
    }

    /// The run of `case` with `mirror`, kept by an earlier test run.
    pub fn kept(&self, case: &str, mirror: &str) -> Option<Kept> {
        let entry = self.entry(case, mirror);
        let code: i32 = std::fs::read_to_string(entry.join("status"))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        Some(Kept {
            upper: entry.join("upper"),
            output: Output {
                status: ExitStatus::from_raw(code << 8),
                stdout: std::fs::read(entry.join("stdout")).ok()?,
                stderr: std::fs::read(entry.join("stderr")).ok()?,
            },
        })
    }

    /// Keeps the run of `case` (what it wrote in `upper`, and `output`) if it ended well; an
    /// entry is renamed into place whole, so a run killed meanwhile leaves none.
    pub fn keep(&self, case: &str, mirror: &str, upper: &Path, output: &Output) {
        if !output.status.success() {
            return;
        }
        let entry = self.entry(case, mirror);
        let stage = self.dir.join(format!(".new-{case}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&stage);
        std::fs::create_dir_all(&stage).expect("stage");
        // cp -a keeps the overlay's whiteouts (device nodes) and its xattrs.
        let copied = Command::new("cp")
            .arg("-a")
            .arg(upper)
            .arg(stage.join("upper"))
            .status()
            .expect("cp");
        assert!(copied.success(), "keeping {}", upper.display());
        std::fs::write(stage.join("stdout"), &output.stdout).expect("stdout");
        std::fs::write(stage.join("stderr"), &output.stderr).expect("stderr");
        std::fs::write(stage.join("status"), "0\n").expect("status");
        let _ = std::fs::remove_dir_all(&entry);
        std::fs::rename(&stage, &entry).expect("the kept run");
    }
}

/// Hashes the files below `dir` (paths relative to `root`, kinds, modes, contents, link
/// targets), in a fixed order.
fn hash_tree(hash: &mut Sha256, root: &Path, dir: &Path) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let meta = std::fs::symlink_metadata(&path).expect("metadata");
        let rel = path.strip_prefix(root).expect("below the root");
        hash.update(format!("{} {:o}\n", rel.display(), meta.mode()));
        if meta.is_dir() {
            hash_tree(hash, root, &path);
        } else if meta.file_type().is_symlink() {
            hash.update(
                std::fs::read_link(&path)
                    .expect("link")
                    .as_os_str()
                    .as_encoded_bytes(),
            );
        } else if meta.is_file() {
            hash.update(std::fs::read(&path).expect("file"));
        }
    }
}
