//! The project, mirror and layer cache of the Debian end-to-end tests that build on
//! e2e_debian's cached layers: the repository's images and roles with the e2e fixtures, the
//! MOFED/NVIDIA stand-ins and, for the DOCA tests, the DOCA repository stand-in (its throwaway
//! key kept with the layer cache, so the mofed layers stay cached run after run), served on
//! e2e_debian's port so the recipes' lower layers are keyed as debian-12-compute's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use super::common::{
    cache_lock, imgbuild_env, repo_root, require_root, serve_dir_on, stdout, test_cache,
};

/// The checks of verify every image with an InfiniBand stack (MOFED's or DOCA's) for the
/// pinned kernel passes.
#[allow(dead_code)]
pub const STACK_CHECKS: &[&str] = &[
    "one_kernel",
    "vermagic",
    "modules_dep",
    "duplicate_modules",
    "mofed_modules",
    "ofed_info",
    "openibd_enabled",
    "opensmd_disabled",
    "no_private_keys",
];

/// The mirror's port for the tests that build the unsigned stack (e2e_debian, e2e_doca).
#[allow(dead_code)]
pub const UNSIGNED_PORT: u16 = 47_811;

/// The mirror's port for the tests that sign with the site's key (e2e_signing,
/// e2e_secure_boot, e2e_compute_secure_boot, e2e_open), so that `scripts/test` runs them beside
/// the unsigned ones: the roles below mofed download nothing from the mirror, so their layers
/// are shared whatever the port, and the signed layers above are keyed by this one. One port
/// run after run keeps those layers cached.
#[allow(dead_code)]
pub const SIGNED_PORT: u16 = 47_812;

/// A project folder, its mirror and e2e_debian's layer cache; the folder is removed with `work`.
pub struct E2eProject {
    /// Held for its removal on drop (read by a test that removes it early).
    #[allow(dead_code)]
    pub work: tempfile::TempDir,
    pub project: PathBuf,
    pub out: PathBuf,
    pub mirror: String,
    /// e2e_debian's layer cache (`test_cache()/e2e-cache`).
    pub cache: PathBuf,
}

fn copy(from: &Path, to: &Path) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("cp -a {}/* {}/", from.display(), to.display()))
        .status()
        .expect("cp");
    assert!(status.success());
}

/// Makes the project in a folder named `prefix…` under /var/tmp, with the MOFED and NVIDIA
/// stand-ins on its mirror, served on `port`.
#[allow(dead_code)]
pub fn e2e_project(prefix: &str, port: u16) -> E2eProject {
    make(prefix, &["make-mirror.sh"], &[], port)
}

/// [`e2e_project`] with the DOCA repository stand-in too; `releases` are passed to the mirror
/// scripts (e.g. `3.2.1:25.10-1.7.1`; none for every release the stand-in knows).
#[allow(dead_code)]
pub fn doca_project(prefix: &str, releases: &[&str], port: u16) -> E2eProject {
    make(
        prefix,
        &["make-mirror.sh", "make-doca-repo.sh"],
        releases,
        port,
    )
}

fn make(prefix: &str, scripts: &[&str], releases: &[&str], port: u16) -> E2eProject {
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
    // Tests in two lanes of scripts/test make the DOCA key at once: one makes it, the other
    // waits and finds it.
    let _guard = cache_lock("doca-standin-gnupg");
    for script in scripts {
        let status = Command::new("bash")
            .arg(repo_root().join("tests/fixtures/installers").join(script))
            .arg(&mirror_dir)
            .args(releases)
            .env("DOCA_STANDIN_GNUPG", &gnupg)
            .status()
            .expect(script);
        assert!(status.success(), "{script}");
    }
    drop(_guard);
    let mirror = serve_dir_on(&mirror_dir, port);
    let out = work.path().join("out");
    let cache = test_cache().join("e2e-cache");
    std::fs::create_dir_all(&cache).expect("cache");
    E2eProject {
        work,
        project,
        out,
        mirror,
        cache,
    }
}

impl E2eProject {
    /// `imgbuild --json build IMAGE` (OCI layout only, then `extra`) with e2e_debian's layer
    /// cache: its output and its `built` event (null when it has none).
    #[allow(dead_code)]
    pub fn build(&self, image: &str, extra: &[&str]) -> (Output, Value) {
        let out = self.out.to_string_lossy().into_owned();
        let mut args = vec![
            "--json",
            "build",
            image,
            "--mirror",
            &self.mirror,
            "--out",
            &out,
            "--format",
            "oci",
        ];
        args.extend_from_slice(extra);
        let env = [
            ("IMGBUILD_CACHE", self.cache.as_path()),
            ("IMGBUILD_CACHE_MAX", Path::new("12G")),
            ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
        ];
        let result = imgbuild_env(&self.project, &args, &env);
        let built = stdout(&result)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["event"] == "built")
            .unwrap_or(Value::Null);
        (result, built)
    }

    /// The folders (`layers/<key>`, each with its `tree`) of the cached layers whose blob is
    /// `digest`.
    #[allow(dead_code)]
    pub fn cached_layers(&self, digest: &str) -> Vec<PathBuf> {
        std::fs::read_dir(self.cache.join("layers"))
            .expect("layers")
            .flatten()
            .filter(|entry| {
                std::fs::read(entry.path().join("entry.json"))
                    .ok()
                    .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
                    .is_some_and(|record| record["blob"]["digest"] == digest)
            })
            .map(|entry| entry.path())
            .collect()
    }

    /// The `.ko` files of the cached layer `digest` (its tree, as the role left it), by file
    /// name.
    #[allow(dead_code)]
    pub fn layer_modules(&self, digest: &str) -> BTreeMap<String, PathBuf> {
        let mut found = BTreeMap::new();
        let mut stack: Vec<PathBuf> = self
            .cached_layers(digest)
            .iter()
            .map(|layer| layer.join("tree"))
            .collect();
        while let Some(dir) = stack.pop() {
            for file in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = file.path();
                if path.is_dir() && !path.is_symlink() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "ko") {
                    found.insert(file.file_name().to_string_lossy().into_owned(), path);
                }
            }
        }
        found
    }

    /// The inputs each role's layer of `image` was keyed by in its last build with this cache
    /// (the cache's `last` records), by file name (`<role>.json`); empty when never built.
    #[allow(dead_code)]
    pub fn last_inputs(&self, image: &str) -> Vec<(String, Value)> {
        let dir = self.cache.join("last").join(image);
        let mut found: Vec<(String, Value)> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| {
                let text = std::fs::read(e.path()).expect("last record");
                let name = e.file_name().to_string_lossy().into_owned();
                (name, serde_json::from_slice(&text).expect("JSON"))
            })
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found
    }
}
