//! The layer cache shared through a registry (`--cache-from`, `--cache-to`; issue 14), on
//! Debian's docker-registry with token auth on 127.0.0.1. Runner A builds and shares; runner B,
//! with an empty cache folder, takes every layer, the debootstrapped base included, from the
//! registry and makes A's manifest without running a role. A layer missing from the registry,
//! a record naming the wrong blob and a registry that is down each end in a correct image with
//! a warning. A changed role runs with those after it while the ones before are hits, and what
//! it builds over layers taken from the registry is what it builds over A's own. `cache prune
//! --registry` keeps what the last build used and deletes the rest. Needs root,
//! debootstrap, docker-registry, python3 and openssl.

use crate::common;
use crate::registry_server;

use std::path::{Path, PathBuf};

use common::*;
use registry_server::*;
use serde_json::Value;

/// A project, the registry and the repository the cache lives in.
struct Site {
    work: tempfile::TempDir,
    project: PathBuf,
    auth: PathBuf,
    registry: Registry,
    repository: String,
}

impl Site {
    fn new() -> Site {
        require_root();
        let registry = start_registry(true);
        let work = tempfile::Builder::new()
            .prefix("imgbuild-registry-cache-")
            .tempdir_in("/var/tmp")
            .expect("work dir");
        let project = work.path().join("project");
        copy_fixture("images", &project);
        // layers-test's two roles, and a third that reads what their whiteouts and opaque
        // folder hide: built over layers taken from the registry, it sees what it sees over
        // a runner's own only if those layers were unpacked in overlay form.
        let third = project.join("roles/third/tasks");
        std::fs::create_dir_all(&third).expect("role");
        std::fs::write(
            third.join("main.yml"),
            "- name: what the layers below show\n  shell: (ls -A /srv/replaced; ls /etc/motd /srv/data/conf || true) > /srv/seen 2>&1\n",
        )
        .expect("role");
        let recipe = std::fs::read_to_string(project.join("images/layers-test.yml"))
            .expect("recipe")
            .replace("layers-test", "layers-cache-test")
            .replace("roles: [first, second]", "roles: [first, second, third]");
        std::fs::write(project.join("images/layers-cache-test.yml"), recipe).expect("recipe");
        let auth = auth_file(work.path(), &registry.host, PASSWORD);
        let repository = format!("docker://{}/site/layer-cache", registry.host);
        Site {
            work,
            project,
            auth,
            registry,
            repository,
        }
    }

    /// An empty cache folder for a runner; `with_base` links the tests' debootstrapped bases in.
    fn runner(&self, name: &str, with_base: bool) -> PathBuf {
        let cache = self.work.path().join(name);
        if with_base {
            shared_base_cache(&cache);
        } else {
            std::fs::create_dir_all(&cache).expect("cache");
        }
        cache
    }

    /// `imgbuild build layers-cache-test` with the runner's cache and `args`.
    fn build(&self, cache: &Path, args: &[&str]) -> Build {
        let out = self.work.path().join("out").to_string_lossy().into_owned();
        let mut all = vec![
            "--json",
            "build",
            "layers-cache-test",
            "--no-verify",
            "--out",
            &out,
        ];
        all.extend_from_slice(args);
        let envs: [(&str, &Path); 3] = [
            ("IMGBUILD_CACHE", cache),
            ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
            ("REGISTRY_AUTH_FILE", &self.auth),
        ];
        let output = imgbuild_env(&self.project, &all, &envs);
        let log = format!("{}{}", stdout(&output), stderr(&output));
        assert!(output.status.success(), "build failed: {log}");
        let built = stdout(&output)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["event"] == "built")
            .expect("a built event");
        Build { built, log }
    }

    /// The cache repository, with rights to delete.
    fn pruning_repository(&self) -> registry::Repository {
        let reference = registry::Reference::parse(&self.repository).expect("reference");
        let credentials = registry::Credentials::new(USER, PASSWORD);
        registry::Repository::open_for_pruning(&reference, Some(credentials))
    }

    /// `imgbuild --json cache prune --registry <the cache> ARGS`.
    fn prune(&self, args: &[&str]) -> std::process::Output {
        let mut all = vec!["--json", "cache", "prune", "--registry", &self.repository];
        all.extend_from_slice(args);
        let envs: [(&str, &Path); 2] = [
            ("IMGBUILD_CACHE", &self.work.path().join("pruner")),
            ("REGISTRY_AUTH_FILE", &self.auth),
        ];
        imgbuild_env(&self.project, &all, &envs)
    }

    /// Writes under `tag` the record of a build of image `other` that started at `started_at`
    /// and has not ended, as a running build leaves it.
    fn put_build_record(&self, repository: &registry::Repository, tag: &str, started_at: u64) {
        let record = serde_json::json!({
            "image": "other", "started_at": started_at, "ended_at": null,
            "succeeded": false, "tags": [],
        });
        let record = serde_json::to_vec(&record).expect("json");
        let config = repository.push_bytes(&record).expect("push the record");
        let empty = repository.push_bytes(b"{}").expect("push the empty blob");
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.imgbuild.layer-cache.build.v1+json",
                       "digest": config, "size": record.len()},
            "layers": [{"mediaType": "application/vnd.oci.empty.v1+json", "digest": empty, "size": 2}],
        });
        let manifest = serde_json::to_vec(&manifest).expect("json");
        repository
            .put_manifest(tag, &manifest, "application/vnd.oci.image.manifest.v1+json")
            .expect("put the record");
    }

    /// `--cache-from` and `--cache-to`, both the site's cache repository.
    fn cache_from_and_to(&self) -> [&str; 4] {
        let repository = self.repository.as_str();
        ["--cache-from", repository, "--cache-to", repository]
    }

    /// The blob file of `digest` in the registry's storage.
    fn stored_blob(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.registry
            .data
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

/// What a build printed and made.
struct Build {
    built: Value,
    log: String,
}

impl Build {
    fn manifest(&self) -> &str {
        self.built["manifest"].as_str().unwrap_or_default()
    }

    /// Each layer's role and where it came from: `registry`, `cache` or `built`.
    fn sources(&self) -> Vec<(String, &'static str)> {
        common::layer_sources(&self.built)
    }

    fn layer(&self, role: &str) -> String {
        let layers = self.built["layers"].as_array().cloned().unwrap_or_default();
        let found = layers.iter().find(|l| l["role"] == role);
        found
            .and_then(|l| l["digest"].as_str())
            .unwrap_or_default()
            .to_owned()
    }

    fn warnings(&self) -> Vec<&str> {
        self.log
            .lines()
            .filter(|l| l.contains("warning: registry cache"))
            .collect()
    }

    fn ran_a_role(&self) -> bool {
        self.log.contains(r#""event":"role_start""#)
    }
}

fn sources(list: &[(&str, &'static str)]) -> Vec<(String, &'static str)> {
    list.iter().map(|(r, s)| (r.to_string(), *s)).collect()
}

#[test]
fn runners_share_layers_through_a_registry() {
    let site = Site::new();
    let cache_to = ["--cache-to", site.repository.as_str()];
    let cache_from = ["--cache-from", site.repository.as_str()];

    // Runner A builds and shares every layer, the base included.
    let a = site.build(&site.runner("a", true), &cache_to);
    assert!(a.warnings().is_empty(), "{}", a.log);
    assert!(a.sources().iter().all(|(_, s)| *s != "registry"));

    // Runner B, with nothing on its disk, takes all of it and runs nothing.
    let b = site.build(&site.runner("b", false), &cache_from);
    assert_eq!(b.manifest(), a.manifest(), "the same image as A's");
    assert_eq!(
        b.sources(),
        sources(&[
            ("base", "registry"),
            ("first", "registry"),
            ("second", "registry"),
            ("third", "registry")
        ])
    );
    assert!(!b.ran_a_role(), "{}", b.log);
    assert!(b.warnings().is_empty(), "{}", b.log);

    changes(&site);
    faults(&site, &a);
    secrets(&site);
    prune(&site);
}

/// `cache prune --registry`: a running build stops it; a dry run deletes nothing; pruning to
/// the last build deletes every other build record (a killed one too) and every cache tag the
/// last build did not use, and a runner with an empty disk still takes all the last build took.
fn prune(site: &Site) {
    let repository = site.pruning_repository();
    let before = repository.tags().expect("tags");
    let records: Vec<&String> = before.iter().filter(|t| t.starts_with("build-")).collect();
    // A, C, D, E and F wrote the cache: each left its record.
    assert_eq!(records.len(), 5, "{before:?}");

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    site.put_build_record(&repository, "build-other-running", now - 60);
    let refused = site.prune(&["--keep", "1"]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("a build of other is running"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(repository.tags().expect("tags").len(), before.len() + 1);

    // Started 7 hours ago and never ended: a killed build, whose record goes.
    site.put_build_record(&repository, "build-other-running", now - 7 * 3600);
    let dry = site.prune(&["--keep", "1", "--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    let said: Value = serde_json::from_str(stdout(&dry).trim()).expect("json");
    assert_eq!(said["deleted"], false);
    assert_eq!(said["builds"].as_array().map(Vec::len), Some(5), "{said}");
    assert_eq!(repository.tags().expect("tags").len(), before.len() + 1);

    let pruned = site.prune(&["--keep", "1"]);
    assert!(pruned.status.success(), "{}", stderr(&pruned));
    let said: Value = serde_json::from_str(stdout(&pruned).trim()).expect("json");
    assert_eq!(said, {
        let mut dry = serde_json::from_str::<Value>(stdout(&dry).trim()).expect("json");
        dry["deleted"] = true.into();
        dry
    });
    let after = repository.tags().expect("tags");
    // F's record, and the base and the two layers F took (role third, with no_log, is never
    // shared).
    assert_eq!(after.len(), 4, "{after:?}");
    assert_eq!(after.iter().filter(|t| t.starts_with("build-")).count(), 1);
    let g = site.build(
        &site.runner("after-prune", false),
        &["--cache-from", site.repository.as_str()],
    );
    assert_eq!(
        g.sources(),
        sources(&[
            ("base", "registry"),
            ("first", "registry"),
            ("second", "registry"),
            ("third", "built")
        ])
    );
}

/// A role with a `no_log` task is not shared, nor any role after it: what they register could
/// hold what no_log hides. (The record the faults left wrong is written again on the way.)
fn secrets(site: &Site) {
    let both = site.cache_from_and_to();
    let tasks = site.project.join("roles/third/tasks/main.yml");
    let mut text = std::fs::read_to_string(&tasks).expect("tasks");
    text.push_str("- name: a secret\n  shell: echo s3cret\n  register: token\n  no_log: true\n");
    std::fs::write(&tasks, text).expect("write");
    let e = site.build(&site.runner("secret-e", true), &both);
    assert_eq!(e.sources()[3], ("third".to_owned(), "built"));
    assert!(e.log.contains("role third has no_log tasks"), "{}", e.log);
    let f = site.build(&site.runner("secret-f", false), &both);
    assert_eq!(
        f.sources(),
        sources(&[
            ("base", "registry"),
            ("first", "registry"),
            ("second", "registry"),
            ("third", "built")
        ]),
        "nothing of role third was shared"
    );
}

/// A missing blob, a record naming the wrong blob, a registry that is down: a warning each,
/// the role runs here, and the image is A's.
fn faults(site: &Site, a: &Build) {
    let cache_from = ["--cache-from", site.repository.as_str()];
    let second = a.layer("second");
    std::fs::remove_file(site.stored_blob(&second)).expect("the blob in the registry");
    let missing = site.build(&site.runner("missing-blob", false), &cache_from);
    assert_eq!(missing.manifest(), a.manifest());
    assert_eq!(missing.sources()[2], ("second".to_owned(), "built"));
    let warnings = missing.warnings();
    assert!(
        warnings.len() == 1 && warnings[0].contains("role second's layer not taken"),
        "{}",
        missing.log
    );

    point_record_at(site, &second, &a.layer("first"));
    let wrong = site.build(&site.runner("wrong-record", false), &cache_from);
    assert_eq!(wrong.manifest(), a.manifest());
    assert_eq!(wrong.sources()[2], ("second".to_owned(), "built"));
    assert!(
        wrong
            .warnings()
            .iter()
            .any(|w| w.contains("not to the record's")),
        "{}",
        wrong.log
    );

    // Down: said once per direction, and the build goes on without it.
    let down = format!("docker://127.0.0.1:{}/site/layer-cache", free_port());
    let offline = site.build(
        &site.runner("down", true),
        &["--cache-from", &down, "--cache-to", &down],
    );
    let warnings = offline.warnings();
    assert_eq!(warnings.len(), 2, "{}", offline.log);
    assert!(warnings.iter().all(|w| w.contains("goes on without it")));
    assert_eq!(offline.sources()[2], ("second".to_owned(), "built"));
}

/// Rewrites every record of layer `layer` so that it names the blob `digest` (another layer's,
/// which the registry has): the blob checks by its digest but does not unpack to the record's
/// diff_id.
fn point_record_at(site: &Site, layer: &str, digest: &str) {
    let reference = registry::Reference::parse(&site.repository).expect("reference");
    let credentials = registry::Credentials::new(USER, PASSWORD);
    let repository = registry::Repository::open(&reference, Some(credentials), true);
    let size = std::fs::metadata(site.stored_blob(digest))
        .expect("blob")
        .len();
    let tags = records(site, &repository);
    let of_layer = tags.iter().filter(|(_, _, r)| r["blob"]["digest"] == layer);
    let mut rewritten = 0;
    for (tag, mut manifest, mut record) in of_layer.cloned() {
        record["blob"]["digest"] = digest.into();
        record["blob"]["size"] = size.into();
        let bytes = serde_json::to_vec(&record).expect("json");
        let file = site.work.path().join("record.json");
        std::fs::write(&file, &bytes).expect("write");
        let record_digest = format!("sha256:{}", sha256_hex(&bytes));
        repository
            .push_blob(&registry::PushBlob {
                digest: record_digest.clone(),
                path: file,
            })
            .expect("push the record");
        manifest["config"]["digest"] = record_digest.into();
        manifest["config"]["size"] = bytes.len().into();
        manifest["layers"][0]["digest"] = digest.into();
        manifest["layers"][0]["size"] = size.into();
        let manifest = serde_json::to_vec(&manifest).expect("json");
        repository
            .put_manifest(
                &tag,
                &manifest,
                "application/vnd.oci.image.manifest.v1+json",
            )
            .expect("put the manifest");
        rewritten += 1;
    }
    assert!(rewritten > 0, "no record of layer {layer} in the registry");
}

/// Every cache record in the registry: tag, manifest, record.
fn records(site: &Site, repository: &registry::Repository) -> Vec<(String, Value, Value)> {
    let tags = std::fs::read_dir(
        site.registry
            .data
            .join("docker/registry/v2/repositories/site/layer-cache/_manifests/tags"),
    )
    .expect("the registry's tags");
    let mut out = Vec::new();
    for tag in tags.flatten() {
        let tag = tag.file_name().to_string_lossy().into_owned();
        let Ok(Some(manifest)) = repository.manifest(&tag) else {
            continue;
        };
        let manifest: Value = serde_json::from_slice(&manifest).expect("json");
        let config = manifest["config"]["digest"].as_str().unwrap_or_default();
        let record = repository.blob_bytes(config, 1 << 20).expect("record");
        let record: Value = serde_json::from_slice(&record).expect("json");
        out.push((tag, manifest, record));
    }
    out
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(bytes))
}

/// A changed role runs, with those after it; what runs over layers taken from the registry
/// makes the layer it makes over A's own. The project is as it was afterwards.
fn changes(site: &Site) {
    let both = site.cache_from_and_to();
    let tasks = site.project.join("roles/third/tasks/main.yml");
    let template = site.project.join("roles/first/templates/conf.j2");
    let originals = [&tasks, &template].map(|f| std::fs::read(f).expect("read"));
    let mut text = std::fs::read_to_string(&tasks).expect("tasks");
    text.push_str("- name: one more file\n  copy: {content: \"more\\n\", dest: /srv/more}\n");
    std::fs::write(&tasks, text).expect("write");
    let c = site.build(&site.runner("c", false), &both);
    assert_eq!(
        c.sources(),
        sources(&[
            ("base", "registry"),
            ("first", "registry"),
            ("second", "registry"),
            ("third", "built")
        ])
    );
    let local = site.build(&site.work.path().join("a"), &[]);
    assert_eq!(local.sources()[3], ("third".to_owned(), "built"));
    assert_eq!(
        c.manifest(),
        local.manifest(),
        "role third built over the registry's layers makes what it makes over A's own"
    );

    std::fs::write(&template, "value = {{ inventory_hostname }} changed\n").expect("write");
    let d = site.build(&site.runner("d", false), &both);
    assert_eq!(
        d.sources(),
        sources(&[
            ("base", "registry"),
            ("first", "built"),
            ("second", "built"),
            ("third", "built")
        ])
    );
    for (file, bytes) in [&tasks, &template].iter().zip(originals) {
        std::fs::write(file, bytes).expect("restore");
    }
}
