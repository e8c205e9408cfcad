//! The project and mirror the DOCA end-to-end tests share: the repository's images and roles
//! with the e2e fixtures, the MOFED/NVIDIA stand-ins and the DOCA repository stand-in (its
//! throwaway key kept with the layer cache, so the mofed layers stay cached run after run),
//! served on e2e_debian's port so the recipes' lower layers are keyed as debian-12-compute's.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::common::{repo_root, require_root, serve_dir_on, test_cache};

/// A project folder and its mirror, removed with `work`.
pub struct DocaProject {
    /// Held for its removal on drop (read by a test that removes it early).
    #[allow(dead_code)]
    pub work: tempfile::TempDir,
    pub project: PathBuf,
    pub out: PathBuf,
    pub mirror: String,
}

fn copy(from: &Path, to: &Path) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("cp -a {}/* {}/", from.display(), to.display()))
        .status()
        .expect("cp");
    assert!(status.success());
}

/// Makes the project in a folder named `prefix…` under /var/tmp; `releases` are passed to the
/// mirror scripts (e.g. `3.2.1:25.10-1.7.1`; none for every release the stand-in knows).
pub fn doca_project(prefix: &str, releases: &[&str]) -> DocaProject {
    require_root();
    let work = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let project = work.path().join("project");
    for part in ["images", "roles"] {
        std::fs::create_dir_all(project.join(part)).expect("project");
        copy(&repo_root().join(part), &project.join(part));
        copy(
            &repo_root().join("tests/fixtures/e2e").join(part),
            &project.join(part),
        );
    }
    std::fs::copy(repo_root().join("mirror.toml"), project.join("mirror.toml")).expect("mirror");
    let mirror_dir = work.path().join("mirror");
    let gnupg = test_cache().join("doca-standin-gnupg");
    for script in ["make-mirror.sh", "make-doca-repo.sh"] {
        let status = Command::new("bash")
            .arg(repo_root().join("tests/fixtures/installers").join(script))
            .arg(&mirror_dir)
            .args(releases)
            .env("DOCA_STANDIN_GNUPG", &gnupg)
            .status()
            .expect(script);
        assert!(status.success(), "{script}");
    }
    let mirror = serve_dir_on(&mirror_dir, 47_811);
    let out = work.path().join("out");
    DocaProject {
        work,
        project,
        out,
        mirror,
    }
}
