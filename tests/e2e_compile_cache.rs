//! The compile cache (issue 58): `kbuild-cache` (debian-12-compute's lower roles, their layers
//! e2e_debian's, and a module compiled with kbuild for the pinned kernel after an early change)
//! built three times, each with a value of the early change no other build had, so its module's
//! role runs each time:
//! 1. kbuild's compiles go through the compile cache;
//! 2. again: every compile is served by the cache and the module has the first build's bytes;
//!    the build shares its layers and its compile entries through a registry (`--cache-to`);
//! 3. a runner with an empty disk (`--cache-from`): the lower layers and the role's compile
//!    entries come from the registry, so nothing is compiled again there either, with the same
//!    module bytes.
//!
//! Needs root, debootstrap, docker-registry and the machine's Debian archive, as CI has.

use crate::common;
use crate::e2e_project;
use crate::registry_server;

use std::path::Path;

use common::*;
use e2e_project::{e2e_project, E2eProject, UNSIGNED_PORT};
use registry_server::*;
use serde_json::Value;

const KERNEL: &str = "6.1.0-50-amd64";

/// One build of kbuild-cache: its module layer's report and the module's bytes.
struct Built {
    layer: Value,
    module: Vec<u8>,
    log: String,
}

impl Built {
    fn compiles(&self, what: &str) -> u64 {
        self.layer["compiles"][what].as_u64().unwrap_or(0)
    }
}

/// Builds kbuild-cache with the layer cache `cache`, the early change `change` and `extra`.
fn build(s: &E2eProject, cache: &Path, auth: &Path, change: &str, extra: &[&str]) -> Built {
    let out = s.out.to_string_lossy().into_owned();
    let early = format!("early_change={change}");
    let mut args = vec![
        "--json",
        "build",
        "kbuild-cache",
        "--mirror",
        &s.mirror,
        "--out",
        &out,
        "--format",
        "oci",
        "-e",
        &early,
    ];
    args.extend_from_slice(extra);
    let env = [
        ("IMGBUILD_CACHE", cache),
        ("IMGBUILD_CACHE_MAX", Path::new("12G")),
        ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
        ("REGISTRY_AUTH_FILE", auth),
    ];
    let result = imgbuild_env(&s.project, &args, &env);
    let log = format!("{}{}", stdout(&result), stderr(&result));
    assert!(result.status.success(), "build failed: {log}");
    let built = built_event(&result);
    let dir = s.out.join("kbuild-cache");
    let report: Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).expect("report.json"))
            .expect("report");
    let layer = report["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .find(|l| l["role"] == "kbuild_hello")
        .expect("the module's layer")
        .clone();
    assert_eq!(layer["cached"], false, "the early change runs the role");
    // bookworm is merged-/usr: the layer holds the module under usr/lib.
    let path = format!("usr/lib/modules/{KERNEL}/extra/kbuild_hello.ko");
    let module = layer_file(cache, &built, "kbuild_hello", &path);
    Built { layer, module, log }
}

/// The bytes of `path` in the layer `role` made in `built` (a `built` event), from its tree in
/// the layer cache `cache`.
fn layer_file(cache: &Path, built: &Value, role: &str, path: &str) -> Vec<u8> {
    let digest = built["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .find(|l| l["role"] == role)
        .map(|l| l["digest"].clone())
        .expect("the role's layer");
    std::fs::read_dir(cache.join("layers"))
        .expect("the layer cache")
        .flatten()
        .find_map(|entry| {
            let record: Value =
                serde_json::from_slice(&std::fs::read(entry.path().join("entry.json")).ok()?)
                    .ok()?;
            (record["blob"]["digest"] == digest)
                .then(|| std::fs::read(entry.path().join("tree").join(path)).ok())
                .flatten()
        })
        .expect("the file in the role's layer")
}

#[test]
fn an_early_change_compiles_nothing_again_here_or_on_an_empty_runner() {
    let s = e2e_project("imgbuild-e2e-compile-cache-", UNSIGNED_PORT);
    let registry = start_registry(true);
    let auth = auth_file(s.work.path(), &registry.host, PASSWORD);
    let repository = format!("docker://{}/site/layer-cache", registry.host);
    // A value of the early change no build had before: the module's role runs in each build.
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos();

    let first = build(&s, &s.cache, &auth, &format!("{run}-first"), &[]);
    let compiles = first.compiles("hits") + first.compiles("misses");
    assert!(
        compiles >= 2,
        "kbuild compiles the module and its .mod.c through the cache: {}",
        first.layer
    );

    let second = build(
        &s,
        &s.cache,
        &auth,
        &format!("{run}-second"),
        &["--cache-to", &repository],
    );
    assert_eq!(
        (second.compiles("hits"), second.compiles("misses")),
        (compiles, 0),
        "every compile is served by the cache: {}",
        second.layer
    );
    assert!(
        first.module == second.module,
        "the module's bytes differ after a hit"
    );

    // A runner whose disk holds nothing: layers and compile entries from the registry.
    let empty = s.work.path().join("empty-runner-cache");
    std::fs::create_dir_all(&empty).expect("cache");
    let third = build(
        &s,
        &empty,
        &auth,
        &format!("{run}-third"),
        &["--cache-from", &repository],
    );
    assert!(
        third
            .log
            .contains("compile cache entries taken from the registry cache"),
        "{}",
        third.log
    );
    assert_eq!(
        (third.compiles("hits"), third.compiles("misses")),
        (compiles, 0),
        "the registry's entries serve every compile: {}",
        third.layer
    );
    assert!(
        third.module == first.module,
        "the module's bytes differ on the empty runner"
    );
}
