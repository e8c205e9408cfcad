//! Images end to end (issue: images): real builds checked by the real OCI clients that
//! Warewulf's import uses (skopeo, umoci), reproducibility, the layer cache, hostile bases.
//! Needs root, debootstrap, skopeo and umoci, as CI has.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

struct Fixture {
    _work: tempfile::TempDir,
    project: PathBuf,
    out: PathBuf,
    cache: PathBuf,
    root: PathBuf,
}

fn fixture() -> Fixture {
    fixture_with(shared_base_cache)
}

/// A fixture whose cache gets its bases from `bases` (shared, or its own copy for a test that
/// checks the whole cache).
fn fixture_with(bases: fn(&Path)) -> Fixture {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-image-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let project = work.path().join("project");
    copy_fixture("images", &project);
    let out = work.path().join("out");
    let cache = work.path().join("cache");
    let root = work.path().to_owned();
    // Share only the debootstrapped base between tests and runs.
    bases(&cache);
    Fixture {
        _work: work,
        project,
        out,
        cache,
        root,
    }
}

fn build(f: &Fixture, extra: &[&str]) -> Value {
    let out = f.out.to_string_lossy().into_owned();
    // These images are about layers, not compute nodes: no kernel, so no verify.
    let mut args = vec!["--json", "build", "--no-verify", "--out", &out];
    args.extend_from_slice(extra);
    let result = imgbuild_env(
        &f.project,
        &args,
        &[
            ("IMGBUILD_CACHE", &f.cache),
            ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
        ],
    );
    assert!(
        result.status.success(),
        "build {extra:?} failed: {}",
        stderr(&result)
    );
    stdout(&result)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "built")
        .expect("a built event")
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn xattrs(path: &Path) -> BTreeMap<String, Vec<u8>> {
    let out = Command::new("getfattr")
        .args(["-h", "-d", "-m", "-", "-e", "hex"])
        .arg(path)
        .output()
        .expect("getfattr");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.as_bytes().to_vec()))
        .collect()
}

/// Every path below `root` with its kind, mode, owner, link target, size and xattrs, plus the
/// groups of hard-linked paths.
fn describe(root: &Path) -> (BTreeMap<String, String>, Vec<Vec<String>>) {
    let mut entries = BTreeMap::new();
    let mut inodes: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let meta = std::fs::symlink_metadata(&path).expect("meta");
            let rel = path
                .strip_prefix(root)
                .expect("prefix")
                .to_string_lossy()
                .into_owned();
            let kind = if meta.is_dir() {
                stack.push(path.clone());
                "dir".to_owned()
            } else if meta.file_type().is_symlink() {
                format!(
                    "link->{}",
                    std::fs::read_link(&path).expect("link").display()
                )
            } else if meta.is_file() {
                if meta.nlink() > 1 {
                    inodes.entry(meta.ino()).or_default().push(rel.clone());
                }
                format!("file:{}", meta.len())
            } else {
                "special".to_owned()
            };
            let x = if meta.file_type().is_symlink() {
                BTreeMap::new()
            } else {
                xattrs(&path)
            };
            entries.insert(
                rel,
                format!(
                    "{kind} {:o} {}:{} {:?}",
                    meta.mode() & 0o7777,
                    meta.uid(),
                    meta.gid(),
                    x
                ),
            );
        }
    }
    let mut groups: Vec<Vec<String>> = inodes
        .into_values()
        .map(|mut g| {
            g.sort();
            g
        })
        .collect();
    groups.sort();
    (entries, groups)
}

#[test]
fn warewulfs_import_path_reads_back_the_same_tree() {
    let f = fixture();
    let built = build(
        &f,
        &["layers-test", "--format", "oci,docker-archive,chroot"],
    );
    let dir = f.out.join("layers-test");
    let inspect: Value = serde_json::from_str(&run(Command::new("skopeo")
        .arg("inspect")
        .arg(format!("oci:{}:latest", dir.join("oci").display()))))
    .expect("inspect");
    assert_eq!(inspect["Digest"], built["manifest"]);
    assert_eq!(inspect["Labels"]["io.imgbuild.kernel"], "6.1.0-50-amd64");
    assert_eq!(
        inspect["Layers"].as_array().map(Vec::len),
        Some(3),
        "base + two roles"
    );
    run(Command::new("skopeo").arg("inspect").arg(format!(
        "docker-archive:{}",
        dir.join("layers-test.tar").display()
    )));
    let oci = f.root.join("copied");
    run(Command::new("skopeo")
        .args(["copy", "-q"])
        .arg(format!(
            "docker-archive:{}",
            dir.join("layers-test.tar").display()
        ))
        .arg(format!("oci:{}:x", oci.display())));
    let bundle = f.root.join("bundle");
    run(Command::new("umoci")
        .args(["unpack", "--image"])
        .arg(format!("{}:x", oci.display()))
        .arg(&bundle));
    let (ours, our_links) = describe(&dir.join("rootfs"));
    let (theirs, their_links) = describe(&bundle.join("rootfs"));
    let differ: Vec<String> = ours
        .iter()
        .filter(|(k, v)| theirs.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: ours {v} / umoci {:?}", theirs.get(k)))
        .chain(
            theirs
                .keys()
                .filter(|k| !ours.contains_key(*k))
                .map(|k| format!("{k}: only in umoci's")),
        )
        .take(20)
        .collect();
    assert!(
        differ.is_empty(),
        "the trees differ:\n{}",
        differ.join("\n")
    );
    assert_eq!(our_links, their_links);
    // What the roles did is there, and what they deleted is not.
    let rootfs = bundle.join("rootfs");
    let secret = std::fs::metadata(rootfs.join("srv/data/secret")).expect("secret");
    assert_eq!(
        (secret.mode() & 0o7777, secret.uid(), secret.gid()),
        (0o600, 123, 456)
    );
    assert_eq!(
        std::fs::metadata(rootfs.join("srv/data/prog"))
            .expect("prog")
            .mode()
            & 0o7777,
        0o4755
    );
    assert!(our_links.iter().any(|g| g
        == &vec![
            "srv/data/prog".to_string(),
            "srv/data/prog-hard".to_string()
        ]));
    assert_eq!(
        std::fs::read_link(rootfs.join("srv/data/sub/link")).expect("link"),
        Path::new("../data/secret")
    );
    assert!(xattrs(&rootfs.join("srv/data/secret")).contains_key("user.imgbuild"));
    assert!(xattrs(&rootfs.join("srv/data/prog")).contains_key("security.capability"));
    assert!(
        !rootfs.join("etc/motd").exists(),
        "a whiteout of a base file"
    );
    assert!(
        !rootfs.join("srv/data/conf").exists(),
        "a whiteout of a file of the first role"
    );
    let replaced: Vec<_> = std::fs::read_dir(rootfs.join("srv/replaced"))
        .expect("replaced")
        .map(|e| e.expect("e").file_name())
        .collect();
    assert_eq!(
        replaced,
        vec![std::ffi::OsString::from("new.txt")],
        "an opaque folder"
    );
    assert!(rootfs.join("bin/sh").exists());
}

fn oci_layers(dir: &Path) -> Vec<Value> {
    let index: Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).expect("index"))
            .expect("json");
    let digest = index["manifests"][0]["digest"].as_str().expect("digest");
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(
            dir.join("blobs/sha256")
                .join(digest.trim_start_matches("sha256:")),
        )
        .expect("manifest"),
    )
    .expect("json");
    manifest["layers"].as_array().cloned().unwrap_or_default()
}

#[test]
fn parallel_builds_of_images_sharing_a_role_make_its_layer_once() {
    let f = fixture();
    let out = f.out.to_string_lossy().into_owned();
    let args = [
        "--json",
        "build",
        "--no-verify",
        "--out",
        &out,
        "--jobs",
        "2",
        "--format",
        "oci",
        "twin-a",
        "twin-b",
    ];
    let result = imgbuild_env(&f.project, &args, &[("IMGBUILD_CACHE", &f.cache)]);
    assert!(result.status.success(), "{}", stderr(&result));
    let shared: Vec<bool> = stdout(&result)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "layer" && e["role"] == "shared")
        .map(|e| e["cached"].as_bool().expect("cached"))
        .collect();
    // Both start at once; the one that waits takes the other's layer from the cache.
    assert_eq!(shared.len(), 2, "{shared:?}");
    assert_eq!(
        shared.iter().filter(|cached| !**cached).count(),
        1,
        "{shared:?}"
    );
}

#[test]
fn zstd_layers_squash_and_parallel_builds_give_the_same_tree() {
    let f = fixture();
    // Two images at once, role layers in zstd.
    let out = f.out.to_string_lossy().into_owned();
    let result = imgbuild_env(
        &f.project,
        &[
            "--json",
            "build",
            "--no-verify",
            "--out",
            &out,
            "--jobs",
            "2",
            "--compression",
            "zstd",
            "--format",
            "oci,chroot",
            "layers-test",
            "repro-test",
        ],
        &[
            ("IMGBUILD_CACHE", &f.cache),
            ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
        ],
    );
    assert!(result.status.success(), "{}", stderr(&result));
    let built = stdout(&result)
        .lines()
        .filter(|l| l.contains("\"event\":\"built\""))
        .count();
    assert_eq!(built, 2, "both images built");
    let layers = oci_layers(&f.out.join("layers-test/oci"));
    let types: Vec<&str> = layers
        .iter()
        .filter_map(|l| l["mediaType"].as_str())
        .collect();
    assert_eq!(
        types,
        [
            "application/vnd.oci.image.layer.v1.tar+gzip",
            "application/vnd.oci.image.layer.v1.tar+zstd",
            "application/vnd.oci.image.layer.v1.tar+zstd"
        ],
        "the shared base stays gzip"
    );
    run(Command::new("skopeo").arg("inspect").arg(format!(
        "oci:{}:latest",
        f.out.join("layers-test/oci").display()
    )));
    let zstd_tree = describe(&f.out.join("layers-test/rootfs"));

    // The same image squashed into one gzip layer: the same tree through skopeo and umoci.
    let squashed = build(
        &f,
        &["layers-test", "--squash", "--format", "docker-archive,oci"],
    );
    assert_eq!(
        squashed["layers"].as_array().map(Vec::len),
        Some(3),
        "per-role report"
    );
    assert_eq!(oci_layers(&f.out.join("layers-test/oci")).len(), 1);
    let oci = f.root.join("squashed-oci");
    run(Command::new("skopeo")
        .args(["copy", "-q"])
        .arg(format!(
            "docker-archive:{}",
            f.out.join("layers-test/layers-test.tar").display()
        ))
        .arg(format!("oci:{}:x", oci.display())));
    let bundle = f.root.join("squashed-bundle");
    run(Command::new("umoci")
        .args(["unpack", "--image"])
        .arg(format!("{}:x", oci.display()))
        .arg(&bundle));
    assert_eq!(describe(&bundle.join("rootfs")), zstd_tree);
}

#[test]
fn without_overlayfs_the_snapshot_fallback_gives_the_same_tree() {
    let f = fixture();
    build(&f, &["layers-test", "--format", "chroot"]);
    let with_overlay = describe(&f.out.join("layers-test/rootfs"));
    let out = f.root.join("out-snapshot");
    let result = imgbuild_env(
        &f.project,
        &[
            "--json",
            "build",
            "--no-verify",
            "--no-cache",
            "--format",
            "chroot",
            "--out",
            &out.to_string_lossy(),
            "layers-test",
        ],
        &[
            ("IMGBUILD_CACHE", &f.cache),
            ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
            ("IMGBUILD_NO_OVERLAY", Path::new("1")),
        ],
    );
    assert!(result.status.success(), "{}", stderr(&result));
    let with_snapshots = describe(&out.join("layers-test/rootfs"));
    assert_eq!(with_snapshots.1, with_overlay.1, "hard links");
    let differ: Vec<String> = with_overlay
        .0
        .iter()
        .filter(|(k, v)| with_snapshots.0.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: overlay {v} / snapshot {:?}", with_snapshots.0.get(k)))
        .chain(
            with_snapshots
                .0
                .keys()
                .filter(|k| !with_overlay.0.contains_key(*k))
                .map(|k| format!("{k}: only with snapshots")),
        )
        .take(20)
        .collect();
    assert!(
        differ.is_empty(),
        "the trees differ:\n{}",
        differ.join("\n")
    );
}

#[test]
fn the_same_inputs_give_the_same_digest_and_a_template_change_rebuilds_from_its_layer() {
    let f = fixture();
    let first = build(&f, &["repro-test", "--no-cache"]);
    let second = build(&f, &["repro-test", "--no-cache"]);
    assert_eq!(
        first["manifest"], second["manifest"],
        "two builds from scratch differ"
    );
    let cached = build(&f, &["repro-test"]);
    assert_eq!(cached["manifest"], first["manifest"]);
    assert_eq!(cached["layers"][1]["cached"], true);
    // Change the template of the role: its layer is rebuilt and says why; the base is reused.
    let template = f.project.join("roles/plain/templates/greeting.j2");
    std::fs::write(&template, "{{ greeting }}, {{ inventory_hostname }}\n").expect("edit");
    let changed = build(&f, &["repro-test"]);
    assert_ne!(changed["manifest"], first["manifest"]);
    assert_eq!(
        changed["layers"][0]["digest"], first["layers"][0]["digest"],
        "the base layer is unchanged"
    );
    assert_eq!(changed["layers"][1]["cached"], false);
    let why = changed["layers"][1]["why"].to_string();
    assert!(
        why.contains("roles/plain/templates/greeting.j2 changed"),
        "{why}"
    );
    // And -e changes the variables, so the layer again.
    let varied = build(&f, &["repro-test", "-e", "greeting=hi"]);
    assert_ne!(
        varied["layers"][1]["digest"],
        changed["layers"][1]["digest"]
    );
}

fn flip_a_byte(path: &Path) {
    let mut bytes = std::fs::read(path).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(path, bytes).expect("write");
}

#[test]
fn a_damaged_cache_is_dropped_and_rebuilt_to_the_same_image() {
    // cache verify checks the whole cache: it owns its bases.
    let f = fixture_with(copied_base_cache);
    let first = build(&f, &["repro-test"]);
    let layer_digest = first["layers"][1]["digest"].as_str().expect("digest");
    let blob = f
        .cache
        .join("blobs/sha256")
        .join(layer_digest.trim_start_matches("sha256:"));

    // A flipped byte in the role's blob: found by its hash, the role runs again.
    flip_a_byte(&blob);
    let rebuilt = build(&f, &["repro-test"]);
    assert_eq!(
        rebuilt["manifest"], first["manifest"],
        "never a wrong image"
    );
    assert_eq!(rebuilt["layers"][1]["cached"], false);
    assert!(rebuilt["layers"][1]["why"]
        .to_string()
        .contains("now hashes to"));

    // A changed file in the layer's folder (a lower of the roles above it): dropped too.
    let layers: Vec<PathBuf> = std::fs::read_dir(f.cache.join("layers"))
        .expect("layers")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(layers.len(), 1);
    flip_a_byte(&layers[0].join("tree/srv/plain/greeting"));
    let again = build(&f, &["repro-test"]);
    assert_eq!(again["manifest"], first["manifest"]);
    assert!(again["layers"][1]["why"]
        .to_string()
        .contains("changed after it was stored"));

    // cache verify: whole now; a damaged blob is found, removed, and exit 1.
    let env = [("IMGBUILD_CACHE", f.cache.as_path())];
    let clean = imgbuild_env(&f.project, &["cache", "verify"], &env);
    assert_eq!(clean.status.code(), Some(0), "{}", stdout(&clean));
    assert!(stdout(&clean).contains("all whole"), "{}", stdout(&clean));
    flip_a_byte(&blob);
    let damaged = imgbuild_env(&f.project, &["cache", "verify"], &env);
    assert_eq!(damaged.status.code(), Some(1), "{}", stdout(&damaged));
    assert!(
        stdout(&damaged).contains(&format!("removed blob {layer_digest}")),
        "{}",
        stdout(&damaged)
    );
    assert!(!blob.exists());
}

#[test]
fn a_base_archive_that_climbs_out_is_refused_and_writes_nothing_outside() {
    let f = fixture();
    // A docker-archive whose only layer holds ../escaped and /abs.
    let staging = f.root.join("evil");
    std::fs::create_dir_all(&staging).expect("mkdir");
    let mut layer = tar::Builder::new(Vec::new());
    for name in ["../escaped", "ok.txt"] {
        let mut header = tar::Header::new_gnu();
        header.set_size(2);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_cksum();
        layer.append(&header, &b"x\n"[..]).expect("append");
    }
    let layer = layer.into_inner().expect("layer");
    // Its config names the layer's own tar: the entries are what gets it refused.
    let config = format!(
        r#"{{"rootfs": {{"type": "layers", "diff_ids": ["sha256:{:x}"]}}}}"#,
        <sha2::Sha256 as sha2::Digest>::digest(&layer)
    );
    let mut archive = tar::Builder::new(Vec::new());
    let mut add = |name: &str, data: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        archive
            .append_data(&mut header, name, data)
            .expect("append");
    };
    add("layer/layer.tar", &layer);
    add("config.json", config.as_bytes());
    add(
        "manifest.json",
        br#"[{"Config":"config.json","RepoTags":["evil:1"],"Layers":["layer/layer.tar"]}]"#,
    );
    std::fs::write(
        f.project.join("evil.tar"),
        archive.into_inner().expect("archive"),
    )
    .expect("write");
    let out = f.out.to_string_lossy().into_owned();
    let result = imgbuild_env(
        &f.project,
        &["build", "--out", &out, "evil-base"],
        &[("IMGBUILD_CACHE", &f.cache)],
    );
    assert_eq!(result.status.code(), Some(1), "{}", stderr(&result));
    assert!(
        stderr(&result).contains("refused: entry '../escaped'"),
        "{}",
        stderr(&result)
    );
    assert!(!f.cache.join("bases").join("escaped").exists() && !f.root.join("escaped").exists());
    assert!(
        !f.out.join("evil-base").exists(),
        "no output for a failed build"
    );
}
