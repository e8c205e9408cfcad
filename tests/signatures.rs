//! Signatures and what vouches for an image (issue 55, parts 2 to 4): a registry base is pulled
//! only as the site's `policy.json` allows (GPG simple signing signatures in a `registries.d`
//! lookaside, made by skopeo with gnupg; signatures attached as cosign attaches them);
//! `build --push` with the site's image-signing key signs what it pushes so that skopeo, under a
//! policy that requires the key, accepts it; each build's provenance (and its timeline, written
//! beside it). Needs root, Debian's `skopeo`, `gnupg`, `openssl`, `gzip` and `docker-registry`.

use crate::common;
use crate::framed_base;
use crate::registry_server;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use framed_base::*;

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

/// skopeo copies `reference` out of the registry under a policy requiring a GPG signature by
/// `key` (the lookaside from `home`'s registries.d): whether it accepted the image, and why not.
/// (Debian's skopeo reads no sigstore signatures: "sigstore disabled".)
fn skopeo_accepts(reference: &str, key: &Path, home: &Path, work: &Path) -> (bool, String) {
    let policy = work.join("skopeo-policy.json");
    let text = serde_json::json!({
        "default": [{"type": "reject"}],
        "transports": {"docker": {"": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": key}]}},
    });
    std::fs::write(&policy, text.to_string()).expect("policy");
    let copy = work.join(format!("copy-{}", reference.replace(['/', ':'], "_")));
    let _ = std::fs::remove_dir_all(&copy);
    let out = Command::new("skopeo")
        .args([
            "copy",
            "-q",
            "--src-tls-verify=false",
            "--remove-signatures",
            "--policy",
        ])
        .arg(&policy)
        .arg("--registries.d")
        .arg(home.join(".config/containers/registries.d"))
        .arg(format!("docker://{reference}"))
        .arg(format!("oci:{}", copy.display()))
        .output()
        .expect("skopeo (CI installs it)");
    (out.status.success(), stderr(&out))
}

/// `build framed --push docker://REFERENCE --secret id=image-signing,src=KEY` of `p`: what it
/// printed, after checking it succeeded, signed and printed no key.
fn push_signed(p: &Project, reference: &str, key: &Path, home: &Path) -> String {
    let out = p.work.path().join("out").to_string_lossy().into_owned();
    let push = format!("docker://{reference}");
    let secret = format!("id=image-signing,src={}", key.display());
    let args = [
        "build",
        "framed",
        "--no-verify",
        "--format",
        "oci",
        "--out",
        &out,
        "--push",
        &push,
        "--secret",
        &secret,
    ];
    let cache = p.work.path().join("cache");
    let envs = [("IMGBUILD_CACHE", cache.as_path()), ("HOME", home)];
    let result = imgbuild_env(&p.project, &args, &envs);
    let err = stderr(&result);
    assert!(result.status.success(), "{err}");
    assert!(
        err.contains(&format!("signed {reference}@sha256:")),
        "{err}"
    );
    assert!(
        !err.contains("PRIVATE KEY"),
        "the key is never printed: {err}"
    );
    assert!(
        err.contains("pushed its provenance.json as a referrer"),
        "{err}"
    );
    err
}

#[test]
fn a_pushed_image_is_signed_with_the_sites_key_and_accepted_by_that_key_alone() {
    let registry = registry_server::start_registry(false);
    let work = tempfile::tempdir().expect("work");
    let bases = signed_bases(&registry, work.path());
    let p = project();
    gzip_layout(&p.project.join("base"), &files());

    // A GPG key: skopeo, under a policy that requires it, accepts the pushed image; under
    // another key's policy, or once the tag moved to an image nobody signed, refuses it.
    let (gnupg, fingerprint, public) = gpg_key(work.path(), "push-site");
    let secret = work.path().join("push-site.secret.asc");
    let exported = Command::new("gpg")
        .arg("--homedir")
        .arg(&gnupg)
        .args(["--batch", "--pinentry-mode", "loopback", "--passphrase", ""])
        .args(["--armor", "--export-secret-keys", &fingerprint])
        .output()
        .expect("gpg");
    std::fs::write(&secret, exported.stdout).expect("secret key");
    let reference = format!("{}/site/pushed:1", registry.host);
    push_signed(&p, &reference, &secret, &bases.home);
    let (accepted, why) = skopeo_accepts(&reference, &public, &bases.home, work.path());
    assert!(accepted, "{why}");
    let (_, _, other) = gpg_key(work.path(), "push-other");
    assert!(!skopeo_accepts(&reference, &other, &bases.home, work.path()).0);
    let moved = Command::new("skopeo")
        .args(["copy", "-q", "--dest-tls-verify=false"])
        .arg(format!("oci:{}", work.path().join("other").display()))
        .arg(format!("docker://{reference}"))
        .output()
        .expect("skopeo");
    assert!(moved.status.success(), "{}", stderr(&moved));
    assert!(!skopeo_accepts(&reference, &public, &bases.home, work.path()).0);

    // A sigstore key: the signature attached as cosign attaches it, which imgbuild's policy
    // check accepts by that key and refuses by another.
    let (key, public) = p256_key(work.path(), "push-cosign");
    let (_, other) = p256_key(work.path(), "push-cosign-other");
    let reference = format!("{}/site/pushed:2", registry.host);
    let printed = push_signed(&p, &reference, &key, &bases.home);
    assert!(printed.contains(".sig"), "{printed}");
    let by = |key: &Path| serde_json::json!({"type": "sigstoreSigned", "keyPath": key});
    let (built, result) = build_under_policy(&registry.host, &bases.home, &reference, by(&public));
    assert!(result.status.success(), "{}", stderr(&result));
    assert!(built
        .work
        .path()
        .join("out/framed/rootfs/srv/last/file.txt")
        .is_file());
    let why = "not signed by a key of the policy";
    refused_under_policy(&registry.host, &bases.home, &reference, by(&other), why);
}

#[test]
fn a_build_writes_its_provenance_which_vouches_for_its_sbom_and_verify_checks_it() {
    let p = project();
    gzip_layout(&p.project.join("base"), &files());
    let out = p.work.path().join("out");
    let out_text = out.to_string_lossy().into_owned();
    let drawn = p.work.path().join("all.svg");
    let drawn_text = drawn.to_string_lossy().into_owned();
    let args = [
        "--json",
        "build",
        "framed",
        "--no-verify",
        "--format",
        "oci,chroot",
        "--out",
        &out_text,
        "--timeline",
        &drawn_text,
    ];
    let cache = p.work.path().join("cache");
    let envs = [
        ("IMGBUILD_CACHE", cache.as_path()),
        ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
    ];
    let first = imgbuild_env(&p.project, &args, &envs);
    assert!(first.status.success(), "{}", stderr(&first));
    let built: serde_json::Value = stdout(&first)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "built")
        .expect("the built event");
    let file = out.join("framed/provenance.json");
    let bytes = std::fs::read(&file).expect("provenance.json");
    let statement: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
    assert_eq!(statement["predicateType"], "https://slsa.dev/provenance/v1");
    let manifest = built["manifest"].as_str().expect("manifest");
    assert_eq!(
        format!(
            "sha256:{}",
            statement["subject"][0]["digest"]["sha256"]
                .as_str()
                .expect("digest")
        ),
        manifest
    );
    let role = std::fs::read(p.project.join("roles/check/tasks/main.yml")).expect("role");
    let dependencies = statement["predicate"]["buildDefinition"]["resolvedDependencies"]
        .as_array()
        .expect("dependencies");
    assert!(
        dependencies
            .iter()
            .any(|d| d["uri"] == "file:roles/check/tasks/main.yml"
                && format!("sha256:{}", d["digest"]["sha256"].as_str().unwrap_or(""))
                    == sha256(&role)),
        "{dependencies:?}"
    );
    // Beside the report, the build's timeline (which report.md links), and --timeline's.
    let own = std::fs::read_to_string(out.join("framed/timeline.svg")).expect("timeline.svg");
    assert!(
        own.starts_with("<svg") && own.contains("<title>check: "),
        "{own}"
    );
    let all = std::fs::read_to_string(&drawn).expect("--timeline");
    assert!(all.contains(">framed</text>"), "{all}");
    let md = std::fs::read_to_string(out.join("framed/report.md")).expect("report.md");
    assert!(md.contains("(timeline.svg)"), "{md}");
    // The same build writes the same statement.
    let again = imgbuild_env(&p.project, &args, &envs);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(std::fs::read(&file).expect("again"), bytes, "reproducible");

    // verify: the provenance vouches for the SBOM the image matches; a changed one does not.
    let sbom = out.join("framed/sbom.cdx.json");
    let rootfs = out.join("framed/rootfs");
    let verify = |provenance: &Path| {
        let args = [
            "verify",
            &rootfs.to_string_lossy(),
            "--sbom",
            &sbom.to_string_lossy(),
            "--provenance",
            &provenance.to_string_lossy(),
        ]
        .map(|a| a.to_owned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        imgbuild_env(&p.project, &args, &envs)
    };
    let checked = verify(&file);
    let said = stdout(&checked);
    // The check's own line: `  ok   provenance ...` or `  FAIL provenance ...`.
    let line = |text: &str, verdict: &str| {
        text.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with(verdict) && l[verdict.len()..].trim_start().starts_with("provenance ")
        })
    };
    assert!(line(&said, "ok") && said.contains("vouches for"), "{said}");
    let forged = p.work.path().join("forged.json");
    let text = String::from_utf8(bytes).expect("utf-8");
    let sbom_digest = sha256(&std::fs::read(&sbom).expect("sbom"));
    std::fs::write(&forged, text.replace(&sbom_digest[7..], &"0".repeat(64))).expect("forged");
    let refused = verify(&forged);
    assert_eq!(refused.status.code(), Some(1), "{}", stdout(&refused));
    let said = stdout(&refused);
    assert!(
        line(&said, "FAIL") && said.contains("does not name this SBOM"),
        "{said}"
    );
}
