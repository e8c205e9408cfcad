//! Base layers are read whole and checked (issue 55, part 1): a `bootstrap: oci` base whose zstd
//! layer is two frames (concatenated `zstd` output, as `pzstd` and `zstd:chunked` write) or whose
//! gzip layer is two members builds with the files of its last frame, which a role's `stat`
//! finds; a blob cut short, a blob that is not its descriptor's digest, a tar that is not its
//! config's diff_id and data after the tar's end are each refused in one line naming the layer,
//! exit 1, with nothing cached and no output. The same bases pushed to Debian's docker-registry
//! on 127.0.0.1 (by skopeo, blobs as they are) and pulled as a `bootstrap: docker` base are held
//! to the same, and to the site's signature policy (`policy.json`, GPG signatures in a
//! `registries.d` lookaside, signed by skopeo). Needs root, Debian's `zstd`, `gzip`, `skopeo`,
//! `gnupg` and `docker-registry`.

mod common;
mod registry_server;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;
use sha2::{Digest, Sha256};

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// A tar of `files` (name, content), ending with its two zero blocks.
fn tar_of(files: &[(&str, &str)]) -> Vec<u8> {
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
fn through(tool: &str, args: &[&str], bytes: &[u8]) -> Vec<u8> {
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
fn two_parts(tar: &[u8], tool: &str, args: &[&str]) -> Vec<u8> {
    let cut = (tar.len() / 2) / 512 * 512;
    let mut blob = through(tool, args, &tar[..cut]);
    blob.extend(through(tool, args, &tar[cut..]));
    blob
}

/// An OCI layout folder at `dir` with one layer `blob` of `media_type` whose config says its
/// tar is `diff_id` and whose descriptor says it is `descriptor` (digest, size).
fn layout(dir: &Path, blob: &[u8], media_type: &str, diff_id: &str, descriptor: (&str, usize)) {
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

struct Project {
    work: tempfile::TempDir,
    project: PathBuf,
}

/// A project whose image `framed` starts from the OCI layout `base/` and whose role finds the
/// base's last file with `stat` and asserts it is there.
fn project() -> Project {
    project_from("bootstrap: oci\n    build_from: base")
}

/// [`project`] with the recipe's base given by `base` (its `bootstrap:` and `build_from:`).
fn project_from(base: &str) -> Project {
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
fn files() -> Vec<(String, String)> {
    let mut files = vec![(
        "etc/os-release".to_owned(),
        "ID=debian\nVERSION_ID=\"12\"\n".to_owned(),
    )];
    files.extend((0..40).map(|i| (format!("srv/first/{i:02}.txt"), format!("{i:0>600}"))));
    files.push(("srv/last/file.txt".into(), "the last one\n".into()));
    files
}

fn base_tar() -> Vec<u8> {
    let files = files();
    let named: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, c)| (n.as_str(), c.as_str()))
        .collect();
    tar_of(&named)
}

fn build(p: &Project) -> std::process::Output {
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

/// A base whose blob is `blob` builds, and the chroot output holds the last file.
fn builds_with_every_file(blob: &[u8], media_type: &str) {
    let p = project();
    let tar = base_tar();
    layout(
        &p.project.join("base"),
        blob,
        media_type,
        &sha256(&tar),
        (&sha256(blob), blob.len()),
    );
    let result = build(&p);
    assert!(result.status.success(), "{}", stderr(&result));
    let last = p.work.path().join("out/framed/rootfs/srv/last/file.txt");
    assert_eq!(
        std::fs::read_to_string(&last).expect("the last file"),
        "the last one\n"
    );
    assert!(p
        .work
        .path()
        .join("out/framed/rootfs/srv/first/00.txt")
        .is_file());
}

#[test]
fn a_zstd_layer_of_two_frames_builds_with_the_files_of_its_last_frame() {
    let blob = two_parts(&base_tar(), "zstd", &["-c", "-q"]);
    builds_with_every_file(&blob, "application/vnd.oci.image.layer.v1.tar+zstd");
}

#[test]
fn a_gzip_layer_of_two_members_builds_with_the_files_of_its_last_member() {
    let blob = two_parts(&base_tar(), "gzip", &["-c", "-n"]);
    builds_with_every_file(&blob, "application/vnd.oci.image.layer.v1.tar+gzip");
}

/// A base that must be refused: exit 1, one error naming `needle`, no base cached, no output.
fn refused(blob: &[u8], diff_id: &str, descriptor: (&str, usize), needle: &str) {
    let p = project();
    layout(
        &p.project.join("base"),
        blob,
        "application/vnd.oci.image.layer.v1.tar+zstd",
        diff_id,
        descriptor,
    );
    let result = build(&p);
    let err = stderr(&result);
    assert_eq!(result.status.code(), Some(1), "{err}");
    assert!(err.contains(needle), "expected '{needle}' in: {err}");
    assert!(err.contains(descriptor.0), "names the layer: {err}");
    // No base tree (nor a half-made one) under any base's folder in the cache.
    let trees: Vec<PathBuf> = std::fs::read_dir(p.work.path().join("cache/bases"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|base| {
            std::fs::read_dir(base.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .filter(|e| e.file_name().to_string_lossy().starts_with("tree"))
        .map(|e| e.path())
        .collect();
    assert!(trees.is_empty(), "nothing cached: {trees:?}");
    assert!(!p.work.path().join("out/framed").exists(), "no output");
}

#[test]
fn a_layer_whose_tar_is_not_its_diff_id_is_refused_with_both_digests() {
    let tar = base_tar();
    let blob = two_parts(&tar, "zstd", &["-c", "-q"]);
    let lie = sha256(b"another tar");
    refused(&blob, &lie, (&sha256(&blob), blob.len()), &lie);
    // The message names the tar's real digest too.
    let p = project();
    layout(
        &p.project.join("base"),
        &blob,
        "application/vnd.oci.image.layer.v1.tar+zstd",
        &lie,
        (&sha256(&blob), blob.len()),
    );
    assert!(stderr(&build(&p)).contains(&sha256(&tar)));
}

#[test]
fn a_blob_cut_short_or_changed_is_refused_before_it_is_read() {
    let tar = base_tar();
    let blob = two_parts(&tar, "zstd", &["-c", "-q"]);
    let cut = &blob[..blob.len() - 40];
    // The descriptor names the whole blob: the cut one is another digest, another size.
    refused(
        cut,
        &sha256(&tar),
        (&sha256(&blob), blob.len()),
        "cut short",
    );
}

#[test]
fn a_last_frame_cut_short_is_an_error_not_an_early_end() {
    let tar = base_tar();
    let blob = two_parts(&tar, "zstd", &["-c", "-q"]);
    // A blob that is its own descriptor's digest (so a registry would serve it) but whose
    // last frame ends early.
    let cut = blob[..blob.len() - 40].to_vec();
    refused(
        &cut,
        &sha256(&tar),
        (&sha256(&cut), cut.len()),
        "base layer 0",
    );
}

#[test]
fn data_after_the_tars_end_is_refused() {
    let mut tar = base_tar();
    tar.extend_from_slice(b"trailing garbage");
    let blob = through("zstd", &["-c", "-q"], &tar);
    refused(
        &blob,
        &sha256(&tar),
        (&sha256(&blob), blob.len()),
        "data after the tar's end",
    );
}

/// The layout at `layout` pushed to `registry` as `site/framed:TAG` by skopeo, its blobs as
/// they are; the reference.
fn pushed(registry: &registry_server::Registry, layout: &Path, tag: &str) -> String {
    let reference = format!("{}/site/framed:{tag}", registry.host);
    let out = Command::new("skopeo")
        .args(["copy", "-q", "--dest-tls-verify=false"])
        .arg(format!("oci:{}", layout.display()))
        .arg(format!("docker://{reference}"))
        .output()
        .expect("skopeo (CI installs it)");
    assert!(out.status.success(), "{}", stderr(&out));
    reference
}

#[test]
fn a_registry_base_of_two_zstd_frames_builds_and_one_whose_diff_id_lies_is_refused() {
    let registry = registry_server::start_registry(false);
    let staging = tempfile::tempdir().expect("staging");
    let tar = base_tar();
    let blob = two_parts(&tar, "zstd", &["-c", "-q"]);
    let media = "application/vnd.oci.image.layer.v1.tar+zstd";
    let good = staging.path().join("good");
    layout(
        &good,
        &blob,
        media,
        &sha256(&tar),
        (&sha256(&blob), blob.len()),
    );
    let reference = pushed(&registry, &good, "frames");
    let p = project_from(&format!(
        "bootstrap: docker\n    build_from: \"{reference}\""
    ));
    let result = build(&p);
    assert!(result.status.success(), "{}", stderr(&result));
    let last = p.work.path().join("out/framed/rootfs/srv/last/file.txt");
    assert_eq!(
        std::fs::read_to_string(last).expect("last"),
        "the last one\n"
    );

    // Its config says another tar: refused, naming both digests, nothing cached.
    let lie = sha256(b"another tar");
    let lying = staging.path().join("lying");
    layout(&lying, &blob, media, &lie, (&sha256(&blob), blob.len()));
    let reference = pushed(&registry, &lying, "lying");
    let p = project_from(&format!(
        "bootstrap: docker\n    build_from: \"{reference}\""
    ));
    let result = build(&p);
    let err = stderr(&result);
    assert_eq!(result.status.code(), Some(1), "{err}");
    assert!(err.contains(&lie) && err.contains(&sha256(&tar)), "{err}");
    assert!(err.contains(&reference), "names the base: {err}");
    assert!(!p.work.path().join("out/framed").exists(), "no output");
    let trees = std::fs::read_dir(p.work.path().join("cache/bases"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|base| base.path().join("tree").exists())
        .count();
    assert_eq!(trees, 0, "no base cached");
}

/// A GnuPG home in `dir/name` with a new signing key and no passphrase: its fingerprint and
/// its public key, exported to a file.
fn gpg_key(dir: &Path, name: &str) -> (PathBuf, String, PathBuf) {
    let home = dir.join(name);
    std::fs::create_dir_all(&home).expect("gnupg home");
    let gpg = |args: &[&str]| {
        let out = Command::new("gpg")
            .arg("--homedir")
            .arg(&home)
            .args(["--batch", "--pinentry-mode", "loopback", "--passphrase", ""])
            .args(args)
            .output()
            .expect("gpg (CI installs gnupg)");
        assert!(out.status.success(), "gpg {args:?}: {}", stderr(&out));
        out.stdout
    };
    let identity = format!("{name} <{name}@site.test>");
    gpg(&["--quick-gen-key", &identity, "ed25519", "sign", "never"]);
    let listed = String::from_utf8(gpg(&["--with-colons", "--list-keys"])).expect("utf-8");
    let fingerprint = listed
        .lines()
        .find_map(|l| l.strip_prefix("fpr:"))
        .and_then(|l| l.trim_matches(':').rsplit(':').next().map(str::to_owned))
        .expect("a fingerprint");
    let public = dir.join(format!("{name}.asc"));
    std::fs::write(&public, gpg(&["--armor", "--export", &fingerprint])).expect("public key");
    (home, fingerprint, public)
}

/// The layout pushed by skopeo as `site/signed:TAG`, signed by the key in `gnupg` (when one is
/// given) into the lookaside `registries_d` names.
fn pushed_signed(
    registry: &registry_server::Registry,
    layout: &Path,
    tag: &str,
    signer: Option<(&Path, &str)>,
    registries_d: &Path,
) -> String {
    let reference = format!("{}/site/signed:{tag}", registry.host);
    let mut skopeo = Command::new("skopeo");
    skopeo
        .args(["copy", "-q", "--dest-tls-verify=false", "--registries.d"])
        .arg(registries_d);
    if let Some((home, fingerprint)) = signer {
        skopeo
            .env("GNUPGHOME", home)
            .args(["--sign-by", fingerprint]);
    }
    let out = skopeo
        .arg(format!("oci:{}", layout.display()))
        .arg(format!("docker://{reference}"))
        .output()
        .expect("skopeo (CI installs it)");
    assert!(out.status.success(), "{}", stderr(&out));
    reference
}

/// A gzip layout of `files` at `dir`.
fn gzip_layout(dir: &Path, files: &[(String, String)]) {
    let named: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, c)| (n.as_str(), c.as_str()))
        .collect();
    let tar = tar_of(&named);
    let blob = through("gzip", &["-c", "-n"], &tar);
    let media = "application/vnd.oci.image.layer.v1.tar+gzip";
    layout(
        dir,
        &blob,
        media,
        &sha256(&tar),
        (&sha256(&blob), blob.len()),
    );
}

/// The bases a signature policy is tried on, pushed to one registry, and what checks them.
struct SignedBases {
    /// Signed by the site's key.
    signed: String,
    /// The same manifest under another tag, unsigned: its signature names the first tag.
    retagged: String,
    /// Another image nobody signed.
    unsigned: String,
    /// The site's public key, and another key's.
    keys: (PathBuf, PathBuf),
    /// A HOME whose registries.d names the lookaside skopeo signed into.
    home: PathBuf,
}

fn signed_bases(registry: &registry_server::Registry, work: &Path) -> SignedBases {
    let (gnupg, fingerprint, site_key) = gpg_key(work, "site");
    let (_, _, other_key) = gpg_key(work, "other");
    // registries.d: this registry's signatures in a lookaside folder (skopeo writes it; imgbuild
    // reads the same file, as containers/image does under the user's HOME).
    let lookaside = work.join("lookaside");
    let home = work.join("home");
    let registries_d = home.join(".config/containers/registries.d");
    std::fs::create_dir_all(&registries_d).expect("registries.d");
    let url = format!("file://{}", lookaside.display());
    let config = format!(
        "docker:\n  {}:\n    sigstore: {url}\n    sigstore-staging: {url}\n    use-sigstore-attachments: true\n",
        registry.host
    );
    std::fs::write(registries_d.join("site.yaml"), config).expect("registries.d file");
    let base = work.join("base");
    gzip_layout(&base, &files());
    let signer = Some((gnupg.as_path(), fingerprint.as_str()));
    let signed = pushed_signed(registry, &base, "signed", signer, &registries_d);
    let retagged = pushed_signed(registry, &base, "retagged", None, &registries_d);
    let mut other_files = files();
    other_files.push(("srv/other.txt".into(), "other\n".into()));
    let other = work.join("other");
    gzip_layout(&other, &other_files);
    let unsigned = pushed_signed(registry, &other, "unsigned", None, &registries_d);
    SignedBases {
        signed,
        retagged,
        unsigned,
        keys: (site_key, other_key),
        home,
    }
}

/// Builds `framed` from the registry base `reference` under a policy whose scope `HOST/site`
/// requires `requirement` (every other scope rejects), with `home` as HOME.
fn build_under_policy(
    host: &str,
    home: &Path,
    reference: &str,
    requirement: serde_json::Value,
) -> (Project, std::process::Output) {
    let p = project_from(&format!(
        "bootstrap: docker\n    build_from: \"{reference}\""
    ));
    let policy = p.work.path().join("policy.json");
    let text = serde_json::json!({
        "default": [{"type": "reject"}],
        "transports": {"docker": {format!("{host}/site"): [requirement]}},
    });
    std::fs::write(&policy, text.to_string()).expect("policy");
    let out = p.work.path().join("out").to_string_lossy().into_owned();
    let policy = policy.to_string_lossy().into_owned();
    let args = [
        "build",
        "framed",
        "--no-verify",
        "--format",
        "chroot",
        "--out",
        &out,
        "--signature-policy",
        &policy,
    ];
    let cache = p.work.path().join("cache");
    let envs = [("IMGBUILD_CACHE", cache.as_path()), ("HOME", home)];
    let result = imgbuild_env(&p.project, &args, &envs);
    (p, result)
}

/// The build under `requirement` is refused: exit 1, one line naming the base and `why`, no
/// output, no base cached.
fn refused_under_policy(
    host: &str,
    home: &Path,
    reference: &str,
    requirement: serde_json::Value,
    why: &str,
) {
    let (p, result) = build_under_policy(host, home, reference, requirement);
    let err = stderr(&result);
    assert_eq!(result.status.code(), Some(1), "{err}");
    assert!(err.contains(reference) && err.contains(why), "{why}: {err}");
    assert!(!p.work.path().join("out/framed").exists(), "no output");
    let bases = p.work.path().join("cache/bases");
    assert!(
        !bases.exists() || std::fs::read_dir(&bases).expect("bases").next().is_none(),
        "no base cached"
    );
}

#[test]
fn a_registry_base_is_pulled_only_as_the_sites_signature_policy_allows() {
    let registry = registry_server::start_registry(false);
    let work = tempfile::tempdir().expect("work");
    let SignedBases {
        signed,
        retagged,
        unsigned,
        keys: (public_a, public_b),
        home,
    } = signed_bases(&registry, work.path());
    let by =
        |key: &Path| serde_json::json!({"type": "signedBy", "keyType": "GPGKeys", "keyPath": key});

    // Signed by the site's key: pulled, built.
    let (p, result) = build_under_policy(&registry.host, &home, &signed, by(&public_a));
    assert!(result.status.success(), "{}", stderr(&result));
    assert!(p
        .work
        .path()
        .join("out/framed/rootfs/srv/last/file.txt")
        .is_file());

    let refused = |reference: &str, requirement, why: &str| {
        refused_under_policy(&registry.host, &home, reference, requirement, why)
    };
    refused(&signed, by(&public_b), "not signed by a key of the policy");
    refused(&unsigned, by(&public_a), "has none");
    refused(&retagged, by(&public_a), "does not accept");
    refused(
        &signed,
        serde_json::json!({"type": "reject"}),
        "the policy rejects it",
    );
}

/// A P-256 key pair made by openssl in `dir`: (private key, public key), PEM.
fn p256_key(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let (private, public) = (
        dir.join(format!("{name}.key")),
        dir.join(format!("{name}.pub")),
    );
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .output()
            .expect("openssl");
        assert!(out.status.success(), "openssl {args:?}: {}", stderr(&out));
    };
    let private_text = private.to_string_lossy();
    run(&[
        "ecparam",
        "-name",
        "prime256v1",
        "-genkey",
        "-noout",
        "-out",
        &private_text,
    ]);
    run(&[
        "ec",
        "-in",
        &private_text,
        "-pubout",
        "-out",
        &public.to_string_lossy(),
    ]);
    (private, public)
}

/// A signature of the image `reference` claiming `claimed`, made with `key` as cosign makes it
/// and attached as cosign attaches it (`sha256-<hex>.sig`): the manifest digest.
fn attach_sigstore_signature(reference: &str, claimed: &str, key: &Path, dir: &Path) -> String {
    use base64::Engine;
    let parsed = registry::Reference::parse(reference).expect("reference");
    let repository = registry::Repository::open(&parsed, None, true);
    let tag = parsed.tag.clone().expect("a tag");
    let manifest = repository
        .manifest(&tag)
        .expect("manifest")
        .expect("pushed");
    let digest = sha256(&manifest);
    let payload = serde_json::json!({
        "critical": {"identity": {"docker-reference": claimed},
                     "image": {"docker-manifest-digest": digest},
                     "type": "cosign container image signature"},
        "optional": null,
    })
    .to_string();
    let payload_file = dir.join("payload.json");
    std::fs::write(&payload_file, &payload).expect("payload");
    let signature = dir.join("payload.sig");
    let out = Command::new("openssl")
        .args(["dgst", "-sha256", "-sign"])
        .arg(key)
        .arg("-out")
        .arg(&signature)
        .arg(&payload_file)
        .output()
        .expect("openssl");
    assert!(out.status.success(), "{}", stderr(&out));
    let encoded = base64::engine::general_purpose::STANDARD
        .encode(std::fs::read(&signature).expect("signature"));
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        br#"{"architecture":"","os":"","config":{},"rootfs":{"type":"layers","diff_ids":[]}}"#,
    )
    .expect("config");
    for (file, bytes) in [
        (&payload_file, payload.as_bytes().to_vec()),
        (&config, std::fs::read(&config).expect("config")),
    ] {
        let blob = registry::PushBlob {
            digest: sha256(&bytes),
            path: file.to_path_buf(),
        };
        repository.push_blob(&blob).expect("blob");
    }
    let config_bytes = std::fs::read(&config).expect("config");
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": sha256(&config_bytes), "size": config_bytes.len()},
        "layers": [{"mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
                    "digest": sha256(payload.as_bytes()), "size": payload.len(),
                    "annotations": {"dev.cosignproject.cosign/signature": encoded}}],
    })
    .to_string();
    let sig_tag = format!("{}.sig", digest.replace(':', "-"));
    repository
        .put_manifest(
            &sig_tag,
            manifest.as_bytes(),
            "application/vnd.oci.image.manifest.v1+json",
        )
        .expect("signature manifest");
    digest
}

#[test]
fn a_registry_base_with_a_sigstore_signature_is_pulled_only_by_the_policys_key() {
    let registry = registry_server::start_registry(false);
    let work = tempfile::tempdir().expect("work");
    let bases = signed_bases(&registry, work.path());
    let (key_a, public_a) = p256_key(work.path(), "cosign-site");
    let (_, public_b) = p256_key(work.path(), "cosign-other");
    // The GPG-signed image gets a cosign signature by the site's key too.
    attach_sigstore_signature(&bases.signed, &bases.signed, &key_a, work.path());
    let by = |key: &Path| serde_json::json!({"type": "sigstoreSigned", "keyPath": key});
    let (p, result) = build_under_policy(&registry.host, &bases.home, &bases.signed, by(&public_a));
    assert!(result.status.success(), "{}", stderr(&result));
    assert!(p
        .work
        .path()
        .join("out/framed/rootfs/srv/last/file.txt")
        .is_file());
    let refused = |reference: &str, requirement, why: &str| {
        refused_under_policy(&registry.host, &bases.home, reference, requirement, why)
    };
    refused(
        &bases.signed,
        by(&public_b),
        "not signed by a key of the policy",
    );
    refused(&bases.unsigned, by(&public_a), ".sig");
    let keyless = serde_json::json!({"type": "sigstoreSigned", "fulcio": {"caPath": "/ca.pem"}});
    refused(&bases.signed, keyless, "keyless (Fulcio)");
}
