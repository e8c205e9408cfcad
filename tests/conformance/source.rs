//! ansible-core's source release, fetched at test time from PyPI with pip (pinned by version and
//! sha256) and its integration targets cached beside the other test fixtures. It is third-party
//! (GPL) code: it never enters the repository.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::test_cache;

/// The ansible-core release whose integration tests are the suite: the 2.14 that Debian 12's
/// `ansible` (the differential harness's oracle) carries.
pub const VERSION: &str = "2.14.18";

/// The sha256 PyPI publishes for that release's source archive; pip refuses any other file.
const SHA256: &str = "a953acb0db9e851c7044da9876b98924b7c2941148cab0c45f094309f17f8fd7";

/// `test/integration/targets/` of the pinned release, fetched and unpacked once.
pub fn integration_targets() -> PathBuf {
    let cached = test_cache().join(format!("ansible-core-{VERSION}"));
    let targets = cached.join("targets");
    if targets.join("setup_remote_tmp_dir").is_dir() {
        return targets;
    }
    std::fs::create_dir_all(test_cache()).expect("test cache");
    let work = test_cache().join(format!("ansible-core-{VERSION}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("work dir");
    let archive = download(&work);
    unpack_targets(&archive, &work.join("targets"));
    std::fs::remove_file(&archive).expect("remove the archive");
    let _ = std::fs::remove_dir_all(&cached);
    std::fs::rename(&work, &cached).expect("cache the targets");
    targets
}

/// Downloads the source archive into `dir` with pip, checked against [`SHA256`].
fn download(dir: &Path) -> PathBuf {
    let requirements = dir.join("requirements.txt");
    std::fs::write(
        &requirements,
        format!("ansible-core=={VERSION} --hash=sha256:{SHA256}\n"),
    )
    .expect("requirements");
    let out = Command::new("python3")
        .args(["-m", "pip", "download", "--no-deps", "--no-binary", ":all:"])
        .args([
            "--require-hashes",
            "--disable-pip-version-check",
            "-q",
            "-r",
        ])
        .arg(&requirements)
        .arg("-d")
        .arg(dir)
        .output()
        .expect("python3 -m pip (apt-get install python3-pip)");
    assert!(
        out.status.success(),
        "pip download of ansible-core {VERSION} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let archive = dir.join(format!("ansible_core-{VERSION}.tar.gz"));
    assert!(archive.is_file(), "pip left no {}", archive.display());
    archive
}

/// Unpacks `test/integration/targets/` of the archive into `dest`.
fn unpack_targets(archive: &Path, dest: &Path) {
    std::fs::create_dir_all(dest).expect("targets dir");
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(archive)
        .arg("-C")
        .arg(dest)
        .arg("--strip-components=4")
        .arg(format!("ansible_core-{VERSION}/test/integration/targets"))
        .status()
        .expect("tar");
    assert!(status.success(), "unpacking {} failed", archive.display());
}
