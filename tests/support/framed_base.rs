//! A small base for the tests of bases (`base_layers.rs`, `signatures.rs`): its files as a tar,
//! compressed by Debian's tools, an OCI layout of it, and a project whose image `framed` starts
//! from it and whose role checks the base's last file is there.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::*;
use sha2::{Digest, Sha256};

pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// A tar of `files` (name, content), ending with its two zero blocks.
pub fn tar_of(files: &[(&str, &str)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, content) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(1_700_000_000);
        header.set_cksum();
        builder
            .append_data(&mut header, name, content.as_bytes())
            .expect("append");
    }
    builder.into_inner().expect("tar")
}

/// `bytes` through a compressor of Debian's (`zstd -c -q`, `gzip -c -n`).
pub fn through(tool: &str, args: &[&str], bytes: &[u8]) -> Vec<u8> {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{tool}: {e} (CI installs it)"));
    let mut stdin = child.stdin.take().expect("stdin");
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect(tool);
    writer.join().expect("writer").expect("write");
    assert!(out.status.success(), "{tool} failed");
    out.stdout
}

/// The tar split in two at a 512-byte block boundary, each part compressed on its own and the
/// two concatenated: two frames or two members, one tar.
pub fn two_parts(tar: &[u8], tool: &str, args: &[&str]) -> Vec<u8> {
    let cut = (tar.len() / 2) / 512 * 512;
    let mut blob = through(tool, args, &tar[..cut]);
    blob.extend(through(tool, args, &tar[cut..]));
    blob
}

/// An OCI layout folder at `dir` with one layer `blob` of `media_type` whose config says its
/// tar is `diff_id` and whose descriptor says it is `descriptor` (digest, size).
pub fn layout(dir: &Path, blob: &[u8], media_type: &str, diff_id: &str, descriptor: (&str, usize)) {
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).expect("blobs");
    let put = |bytes: &[u8]| -> String {
        let digest = sha256(bytes);
        std::fs::write(blobs.join(&digest[7..]), bytes).expect("blob");
        digest
    };
    std::fs::write(blobs.join(&descriptor.0[7..]), blob).expect("layer");
    let config = serde_json::json!({
        "architecture": "amd64", "os": "linux", "config": {},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    })
    .to_string();
    let config_digest = put(config.as_bytes());
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": media_type, "digest": descriptor.0, "size": descriptor.1}],
    })
    .to_string();
    let manifest_digest = put(manifest.as_bytes());
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": manifest_digest, "size": manifest.len()}],
    });
    std::fs::write(dir.join("index.json"), index.to_string()).expect("index");
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).expect("layout");
}

pub struct Project {
    /// The test's folder (the project, the cache, the outputs).
    pub work: tempfile::TempDir,
    /// The project.
    pub project: PathBuf,
}

/// A project whose image `framed` starts from the OCI layout `base/` and whose role finds the
/// base's last file with `stat` and asserts it is there.
pub fn project() -> Project {
    project_from("bootstrap: oci\n    build_from: base")
}

/// [`project`] with the recipe's base given by `base` (its `bootstrap:` and `build_from:`).
pub fn project_from(base: &str) -> Project {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-base-layers-")
        .tempdir_in("/var/tmp")
        .expect("work");
    let project = work.path().join("project");
    let tasks = project.join("roles/check/tasks");
    std::fs::create_dir_all(&tasks).expect("role");
    std::fs::create_dir_all(project.join("images")).expect("images");
    std::fs::write(
        project.join("images/framed.yml"),
        format!(
            "- name: framed\n  hosts: localhost\n  vars:\n    {base}\n    \
             image_name: framed\n    kernel_version: \"6.1.0-50-amd64\"\n  \
             facts: {{distribution: Debian, distribution_version: \"12\"}}\n  roles: [check]\n"
        ),
    )
    .expect("recipe");
    std::fs::write(
        tasks.join("main.yml"),
        "- name: the base's last file\n  stat: {path: /srv/last/file.txt}\n  register: last\n\
         - name: it is there\n  assert:\n    that: [last.stat.exists, last.stat.size == 13]\n",
    )
    .expect("tasks");
    Project { work, project }
}

/// The base's files: enough that a cut falls between the first and the last.
pub fn files() -> Vec<(String, String)> {
    let mut files = vec![(
        "etc/os-release".to_owned(),
        "ID=debian\nVERSION_ID=\"12\"\n".to_owned(),
    )];
    files.extend((0..40).map(|i| (format!("srv/first/{i:02}.txt"), format!("{i:0>600}"))));
    files.push(("srv/last/file.txt".into(), "the last one\n".into()));
    files
}

pub fn base_tar() -> Vec<u8> {
    let files = files();
    let named: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, c)| (n.as_str(), c.as_str()))
        .collect();
    tar_of(&named)
}

pub fn build(p: &Project) -> std::process::Output {
    let out = p.work.path().join("out").to_string_lossy().into_owned();
    imgbuild_env(
        &p.project,
        &[
            "build",
            "framed",
            "--no-verify",
            "--format",
            "chroot",
            "--out",
            &out,
        ],
        &[
            ("IMGBUILD_CACHE", &p.work.path().join("cache")),
            ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
        ],
    )
}
