//! Registries (issue: images): Debian's docker-registry on 127.0.0.1. A built image is pushed,
//! read back by skopeo, pulled as the base of another recipe; a multi-platform index resolves to
//! linux/amd64; with token auth, a wrong password is refused with a clear error that never shows
//! the password. Needs root, debootstrap, skopeo, docker-registry, python3 and openssl.

use crate::common;
use crate::registry_server;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use registry_server::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

struct Project {
    _work: tempfile::TempDir,
    project: PathBuf,
    out: PathBuf,
    cache: PathBuf,
}

fn project() -> Project {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-registry-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let project = work.path().join("project");
    copy_fixture("images", &project);
    let cache = work.path().join("cache");
    shared_base_cache(&cache);
    Project {
        out: work.path().join("out"),
        project,
        cache,
        _work: work,
    }
}

fn write_recipe(p: &Project, name: &str, build_from: &str) {
    std::fs::write(
        p.project.join(format!("images/{name}.yml")),
        format!(
            "- name: {name}.yml\n  hosts: localhost\n  vars:\n    bootstrap: docker\n    build_from: \"{build_from}\"\n    image_name: {name}\n    kernel_version: \"6.1.0-50-amd64\"\n    greeting: pulled\n  facts: {{distribution: Debian, distribution_version: \"12\"}}\n  roles: [plain]\n"
        ),
    )
    .expect("recipe");
}

fn imgbuild_with(p: &Project, args: &[&str], auth_file: Option<&Path>) -> std::process::Output {
    let out = p.out.to_string_lossy().into_owned();
    let mut all = vec!["--json", "build", "--no-verify", "--out", &out];
    all.extend_from_slice(args);
    let mut envs: Vec<(&str, &Path)> = vec![
        ("IMGBUILD_CACHE", &p.cache),
        ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
    ];
    if let Some(file) = auth_file {
        envs.push(("REGISTRY_AUTH_FILE", file));
    }
    imgbuild_env(&p.project, &all, &envs)
}

fn built(output: &std::process::Output) -> Value {
    assert!(output.status.success(), "build failed: {}", stderr(output));
    stdout(output)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "built")
        .expect("a built event")
}

/// The SBOM the push sent as an OCI 1.1 referrer is listed by the image's digest (through the
/// fallback tag: distribution 2.8 has no referrers API) once, however often the image was
/// pushed, and its bytes are those written beside the outputs.
fn sbom_is_found_by_the_image_digest(p: &Project, reference: &str, digest: Option<&str>) {
    let digest = digest.expect("a manifest digest");
    let reference = registry::Reference::parse(&format!("docker://{reference}")).expect("ref");
    let repository = registry::Repository::open(&reference, None, false);
    let found = repository
        .referrers(digest, Some("application/vnd.cyclonedx+json"))
        .expect("referrers");
    assert_eq!(found.len(), 1, "{found:?}");
    let manifest: Value = serde_json::from_slice(
        &repository
            .manifest(&found[0].digest)
            .expect("get")
            .expect("the artifact manifest"),
    )
    .expect("json");
    assert_eq!(manifest["subject"]["digest"], digest);
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.oci.empty.v1+json"
    );
    let layer = manifest["layers"][0]["digest"].as_str().expect("a layer");
    let sbom = repository
        .blob_bytes(layer, 64 << 20)
        .expect("the SBOM blob");
    let written = std::fs::read(p.out.join("repro-test/sbom.cdx.json")).expect("the SBOM");
    assert_eq!(sbom, written);
}

fn skopeo_digest(reference: &str, auth_file: Option<&Path>) -> String {
    let mut cmd = Command::new("skopeo");
    cmd.args(["inspect", "--tls-verify=false"]);
    if let Some(file) = auth_file {
        cmd.arg("--authfile").arg(file);
    }
    let out = cmd
        .arg(format!("docker://{reference}"))
        .output()
        .expect("skopeo");
    assert!(out.status.success(), "skopeo inspect: {}", stderr(&out));
    let parsed: Value = serde_json::from_slice(&out.stdout).expect("json");
    parsed["Digest"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn push_then_pull_as_a_base_and_resolve_a_multi_platform_index() {
    let registry = start_registry(false);
    let p = project();
    let base_ref = format!("{}/site/repro:v1", registry.host);

    let first = built(&imgbuild_with(
        &p,
        &["repro-test", "--push", &format!("docker://{base_ref}")],
        None,
    ));
    assert_eq!(
        skopeo_digest(&base_ref, None),
        first["manifest"].as_str().unwrap_or_default(),
        "skopeo reads back what was pushed"
    );
    // verify reads the pushed image from the registry, blob by blob, and judges it as it
    // judges the same image's OCI layout on disk.
    let verify = |input: &str| {
        let out = imgbuild_env(
            &p.project,
            &["--json", "verify", input],
            &[("IMGBUILD_CACHE", &p.cache)],
        );
        let report: Value = serde_json::from_str(stdout(&out).trim())
            .unwrap_or_else(|e| panic!("verify {input}: {e}: {}", stderr(&out)));
        (out.status.code(), report)
    };
    let (code, remote) = verify(&format!("docker://{base_ref}"));
    let (_, local) = verify(&p.out.join("repro-test/oci").to_string_lossy());
    assert_eq!(code, Some(1), "this image has no kernel: {remote:#}");
    assert_eq!(remote["checks"], local["checks"]);
    assert_eq!(remote["kernel"], "6.1.0-50-amd64", "from the image's label");
    assert!(
        remote["skipped"]
            .as_array()
            .is_some_and(|s| s.iter().any(|c| c["id"] == "mofed_modules")),
        "{remote:#}"
    );
    // Pushing again uploads nothing.
    let again = imgbuild_with(
        &p,
        &["repro-test", "--push", &format!("docker://{base_ref}")],
        None,
    );
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("(0 blobs uploaded"),
        "{}",
        stderr(&again)
    );
    sbom_is_found_by_the_image_digest(&p, &base_ref, first["manifest"].as_str());

    write_recipe(&p, "pulled", &base_ref);
    let pulled = built(&imgbuild_with(
        &p,
        &["pulled", "--format", "chroot,oci"],
        None,
    ));
    let rootfs = p.out.join("pulled/rootfs");
    assert_eq!(
        std::fs::read_to_string(rootfs.join("srv/plain/greeting")).expect("the role's file"),
        "pulled from pulled\n"
    );
    assert!(
        rootfs.join("usr/bin/dpkg").is_file(),
        "the pulled base is below"
    );
    assert!(pulled["layers"].as_array().is_some_and(|l| l.len() == 2));

    // An air-gapped site: registries.conf gives docker.io a mirror on the site's registry; the
    // recipe keeps naming docker.io and its base comes from the mirror.
    let copy = Command::new("skopeo")
        .args(["copy", "-q", "--dest-tls-verify=false"])
        .arg(format!(
            "oci:{}:latest",
            p.out.join("repro-test/oci").display()
        ))
        .arg(format!("docker://{}/hub/library/debian:12", registry.host))
        .output()
        .expect("skopeo");
    assert!(copy.status.success(), "{}", stderr(&copy));
    let conf = p.out.join("registries.conf");
    std::fs::write(
        &conf,
        format!(
            "[[registry]]\nprefix = \"docker.io\"\nlocation = \"docker.io\"\n[[registry.mirror]]\nlocation = \"{}/hub\"\n",
            registry.host
        ),
    )
    .expect("registries.conf");
    write_recipe(&p, "from-hub", "docker.io/library/debian:12");
    let out = p.out.to_string_lossy().into_owned();
    let build_with_conf = |image: &str| {
        imgbuild_env(
            &p.project,
            &[
                "--json",
                "build",
                "--no-verify",
                "--format",
                "chroot",
                "--out",
                &out,
                image,
            ],
            &[
                ("IMGBUILD_CACHE", &p.cache),
                ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
                ("CONTAINERS_REGISTRIES_CONF", &conf),
            ],
        )
    };
    built(&build_with_conf("from-hub"));
    assert!(p.out.join("from-hub/rootfs/srv/plain/greeting").is_file());
    // A registry that cannot be reached: which, that the machine may be offline, what to do.
    write_recipe(&p, "unreachable", "registry.invalid/library/debian:12");
    let offline = build_with_conf("unreachable");
    assert_eq!(offline.status.code(), Some(1));
    for needed in [
        "registry.invalid",
        "may be offline",
        "[[registry.mirror]]",
        "docs/air-gapped.md",
    ] {
        assert!(
            stderr(&offline).contains(needed),
            "{needed}: {}",
            stderr(&offline)
        );
    }

    // An index with an arm64 image first, whose layer marks it: the amd64 one must be chosen.
    let multi_ref = format!("{}/site/multi:v1", registry.host);
    let layout = p.out.join("multi-oci");
    multi_platform_layout(&p.out.join("pulled/oci"), &layout);
    let copy = Command::new("skopeo")
        .args(["copy", "--all", "--dest-tls-verify=false"])
        .arg(format!("oci:{}", layout.display()))
        .arg(format!("docker://{multi_ref}"))
        .output()
        .expect("skopeo");
    assert!(copy.status.success(), "{}", stderr(&copy));
    write_recipe(&p, "multi", &multi_ref);
    built(&imgbuild_with(&p, &["multi", "--format", "chroot"], None));
    let rootfs = p.out.join("multi/rootfs");
    assert!(rootfs.join("srv/plain/greeting").is_file());
    assert!(!rootfs.join("ARM64").exists(), "the arm64 image was pulled");

    // A tag that does not exist: a clear error naming it.
    write_recipe(&p, "missing", &format!("{}/site/none:v9", registry.host));
    let missing = imgbuild_with(&p, &["missing"], None);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).contains("site/none"),
        "{}",
        stderr(&missing)
    );
    assert!(
        stderr(&missing).contains("HTTP 404"),
        "{}",
        stderr(&missing)
    );
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// An OCI layout whose index lists an arm64 image (its own config and a layer adding /ARM64)
/// before the amd64 image of `source`.
fn multi_platform_layout(source: &Path, dest: &Path) {
    let blobs = dest.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).expect("mkdir");
    let copy = Command::new("cp")
        .arg("-a")
        .arg(source.join("blobs/sha256/."))
        .arg(&blobs)
        .status()
        .expect("cp");
    assert!(copy.success());
    std::fs::write(
        dest.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .expect("write");
    let put = |bytes: &[u8]| -> String {
        let digest = sha256(bytes);
        std::fs::write(blobs.join(digest.trim_start_matches("sha256:")), bytes).expect("blob");
        digest
    };
    let index: Value =
        serde_json::from_slice(&std::fs::read(source.join("index.json")).expect("index"))
            .expect("json");
    let amd64 = index["manifests"][0].clone();
    let read_blob = |digest: &str| {
        std::fs::read(blobs.join(digest.trim_start_matches("sha256:"))).expect("blob")
    };
    let manifest: Value =
        serde_json::from_slice(&read_blob(amd64["digest"].as_str().expect("digest")))
            .expect("json");

    let mut layer = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(4);
    header.set_mode(0o644);
    header.set_cksum();
    layer
        .append_data(&mut header, "ARM64", &b"arm\n"[..])
        .expect("tar");
    let layer_tar = layer.into_inner().expect("tar");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &layer_tar).expect("gzip");
    let layer_gz = gz.finish().expect("gzip");
    let layer_digest = put(&layer_gz);

    let mut config: Value = serde_json::from_slice(&read_blob(
        manifest["config"]["digest"].as_str().expect("config"),
    ))
    .expect("json");
    config["architecture"] = json!("arm64");
    if let Some(ids) = config["rootfs"]["diff_ids"].as_array_mut() {
        ids.push(json!(sha256(&layer_tar)));
    }
    if let Some(history) = config["history"].as_array_mut() {
        history.push(json!({"created_by": "test: arm64 marker"}));
    }
    let config_bytes = serde_json::to_vec(&config).expect("json");
    let config_digest = put(&config_bytes);
    let mut arm = manifest.clone();
    arm["config"]["digest"] = json!(config_digest);
    arm["config"]["size"] = json!(config_bytes.len());
    if let Some(layers) = arm["layers"].as_array_mut() {
        layers.push(json!({
            "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
            "digest": layer_digest,
            "size": layer_gz.len(),
        }));
    }
    let arm_bytes = serde_json::to_vec(&arm).expect("json");
    let arm_digest = put(&arm_bytes);
    let mut amd64_entry = amd64.clone();
    amd64_entry["platform"] = json!({"os": "linux", "architecture": "amd64"});
    if let Some(obj) = amd64_entry.as_object_mut() {
        obj.remove("annotations");
    }
    let inner = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": arm_digest,
             "size": arm_bytes.len(), "platform": {"os": "linux", "architecture": "arm64"}},
            amd64_entry,
        ],
    });
    let inner_bytes = serde_json::to_vec(&inner).expect("json");
    let inner_digest = put(&inner_bytes);
    let top = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.index.v1+json",
                       "digest": inner_digest, "size": inner_bytes.len()}],
    });
    std::fs::write(
        dest.join("index.json"),
        serde_json::to_vec(&top).expect("json"),
    )
    .expect("index");
}

#[test]
fn token_auth_refuses_a_wrong_password_without_showing_it() {
    let registry = start_registry(true);
    let p = project();
    let reference = format!("docker://{}/site/secure:v1", registry.host);
    let dir = tempfile::tempdir().expect("dir");

    let wrong_password = "wr0ng-pa55word-xyz";
    let wrong = auth_file(dir.path(), &registry.host, wrong_password);
    let refused = imgbuild_with(&p, &["repro-test", "--push", &reference], Some(&wrong));
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let all = format!("{}{}", stdout(&refused), stderr(&refused));
    assert!(all.contains("refused"), "{all}");
    assert!(all.contains(&format!("user '{USER}'")), "{all}");
    assert!(
        all.contains("auth.json"),
        "names where the credentials came from: {all}"
    );
    assert!(!all.contains(wrong_password), "the password leaked: {all}");
    use base64::Engine;
    let encoded =
        base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{wrong_password}"));
    assert!(
        !all.contains(&encoded),
        "the encoded password leaked: {all}"
    );
    let report = std::fs::read_to_string(p.out.join("repro-test/report.json")).unwrap_or_default();
    assert!(!report.contains(wrong_password));

    // No credentials at all: told how to give them.
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, r#"{"auths": {}}"#).expect("write");
    let anonymous = imgbuild_with(&p, &["repro-test", "--push", &reference], Some(&empty));
    assert_eq!(anonymous.status.code(), Some(1));
    assert!(
        stderr(&anonymous).contains("REGISTRY_AUTH_FILE"),
        "{}",
        stderr(&anonymous)
    );

    let right = auth_file(dir.path(), &registry.host, PASSWORD);
    let pushed = built(&imgbuild_with(
        &p,
        &["repro-test", "--push", &reference],
        Some(&right),
    ));
    assert_eq!(
        skopeo_digest(reference.trim_start_matches("docker://"), Some(&right)),
        pushed["manifest"].as_str().unwrap_or_default()
    );
    write_recipe(&p, "pulled", reference.trim_start_matches("docker://"));
    built(&imgbuild_with(&p, &["pulled"], Some(&right)));
}
