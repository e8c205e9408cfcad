//! Checking a pulled image against the site's policy (`policy.rs`): sigstore signatures (see
//! `sigstore.rs`) and GPG simple signing signatures, found where `registries.d` says (the lookaside, `file://` or `http(s)://`, as
//! `skopeo copy --sign-by` writes them), verified with `gpg` against the policy's keys only,
//! their payload naming the manifest's digest and an identity the policy accepts.

use std::path::PathBuf;
use std::process::Command;

use base64::Engine;

use crate::identity::{claims, Identity};
use crate::policy::{Requirement, SitePolicy};
use crate::Reference;

/// Whether the image `reference` names, whose manifest has `digest`, may be used: `Ok` when
/// every requirement of its scope holds, else the one line saying which failed.
pub fn check(site: &SitePolicy, reference: &Reference, digest: &str) -> Result<(), String> {
    let (requirements, scope) = site.policy.requirements(reference);
    let scope = if scope.is_empty() {
        "docker's default".to_owned()
    } else {
        scope
    };
    let refused = |why: String| {
        format!(
            "{reference}: refused by {} (scope {scope}): {why}",
            site.path.display()
        )
    };
    if requirements.is_empty() {
        return Err(refused("the scope lists no requirement".into()));
    }
    for requirement in requirements {
        match requirement {
            Requirement::InsecureAcceptAnything => {}
            Requirement::Reject => return Err(refused("the policy rejects it".into())),
            Requirement::SigstoreSigned {
                key_path,
                key_paths,
                key_data,
                fulcio,
                signed_identity,
            } => {
                if fulcio.is_some() {
                    return Err(refused("it requires a keyless (Fulcio) sigstore signature, which imgbuild cannot verify; give the policy the signer's public key (keyPath), or pull it with skopeo into an OCI layout (bootstrap: oci)".into()));
                }
                let pems = Keys::of(key_path, key_paths, key_data).map_err(&refused)?;
                let keys = crate::sigstore::keys(&pems.0).map_err(&refused)?;
                let identity = Identity::of(signed_identity.as_ref()).map_err(&refused)?;
                crate::sigstore::signed(reference, digest, &keys, &identity).map_err(&refused)?;
            }
            Requirement::SignedBy {
                key_type,
                key_path,
                key_paths,
                key_data,
                signed_identity,
            } => {
                if key_type != "GPGKeys" {
                    return Err(refused(format!(
                        "signedBy keyType {key_type} is not GPGKeys"
                    )));
                }
                let keys = Keys::of(key_path, key_paths, key_data).map_err(&refused)?;
                let identity = Identity::of(signed_identity.as_ref()).map_err(&refused)?;
                signed(reference, digest, &keys, &identity).map_err(&refused)?;
            }
        }
    }
    Ok(())
}

/// The public keys a `signedBy` requirement names.
struct Keys(Vec<Vec<u8>>);

impl Keys {
    fn of(
        path: &Option<PathBuf>,
        paths: &Option<Vec<PathBuf>>,
        data: &Option<String>,
    ) -> Result<Self, String> {
        let mut keys = Vec::new();
        for path in path.iter().chain(paths.iter().flatten()) {
            keys.push(std::fs::read(path).map_err(|e| format!("key {}: {e}", path.display()))?);
        }
        if let Some(data) = data {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|e| format!("keyData is not base64: {e}"))?;
            keys.push(decoded);
        }
        if keys.is_empty() {
            return Err("the requirement names no key (keyPath, keyPaths or keyData)".into());
        }
        Ok(Self(keys))
    }
}

/// Ok when one of the image's lookaside signatures verifies with `keys`, names `digest` and an
/// identity `identity` accepts.
fn signed(
    reference: &Reference,
    digest: &str,
    keys: &Keys,
    identity: &Identity,
) -> Result<(), String> {
    let base = crate::lookaside::base(reference)?;
    let (algorithm, hex) = digest.split_once(':').unwrap_or(("sha256", digest));
    // The lookaside's layout: the repository's path (without the host), then the digest.
    let folder = format!(
        "{}/{}@{algorithm}={hex}",
        base.trim_end_matches('/'),
        reference.repository
    );
    let mut why = Vec::new();
    for n in 1.. {
        let Some(signature) = crate::lookaside::fetch(&format!("{folder}/signature-{n}"))? else {
            break;
        };
        match verified(&signature, keys)
            .and_then(|payload| claims(&payload, digest, reference, identity))
        {
            Ok(()) => return Ok(()),
            Err(e) => why.push(format!("signature-{n}: {e}")),
        }
    }
    if why.is_empty() {
        return Err(format!(
            "it requires a signature by the policy's key, and {folder} has none"
        ));
    }
    Err(format!("no signature holds: {}", why.join("; ")))
}

/// The payload of an OpenPGP signed message, when a key of `keys` made the signature.
fn verified(signature: &[u8], keys: &Keys) -> Result<Vec<u8>, String> {
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let gpg = |args: &[&str]| {
        Command::new("gpg")
            .arg("--homedir")
            .arg(home.path())
            .args(["--batch", "--no-tty", "--quiet"])
            .args(args)
            .output()
            .map_err(|e| format!("gpg (install gnupg to check signedBy policies): {e}"))
    };
    for (i, key) in keys.0.iter().enumerate() {
        let file = home.path().join(format!("key-{i}"));
        std::fs::write(&file, key).map_err(|e| e.to_string())?;
        let out = gpg(&["--import", &file.to_string_lossy()])?;
        if !out.status.success() {
            return Err(format!(
                "the policy's key {i} does not import: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    let signed = home.path().join("signature");
    let payload = home.path().join("payload");
    std::fs::write(&signed, signature).map_err(|e| e.to_string())?;
    let out = gpg(&[
        "--status-fd",
        "1",
        "--output",
        &payload.to_string_lossy(),
        "--decrypt",
        &signed.to_string_lossy(),
    ])?;
    let status = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !status.lines().any(|l| l.starts_with("[GNUPG:] VALIDSIG ")) {
        return Err("not signed by a key of the policy".into());
    }
    std::fs::read(&payload).map_err(|e| e.to_string())
}

/// `payload` signed (an OpenPGP signed message, as `gpg --sign` writes it) with the armored
/// secret key `secret`, in a GnuPG home of its own that is removed after.
pub(crate) fn gpg_sign(payload: &[u8], secret: &[u8]) -> Result<Vec<u8>, String> {
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let gpg = |args: &[&str]| {
        Command::new("gpg")
            .arg("--homedir")
            .arg(home.path())
            .args([
                "--batch",
                "--no-tty",
                "--quiet",
                "--pinentry-mode",
                "loopback",
                "--passphrase",
                "",
            ])
            .args(args)
            .output()
            .map_err(|e| format!("gpg (install gnupg to sign with a GPG key): {e}"))
    };
    let key = home.path().join("secret.asc");
    std::fs::write(&key, secret).map_err(|e| e.to_string())?;
    let out = gpg(&["--import", &key.to_string_lossy()])?;
    std::fs::remove_file(&key).map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(
            "the image-signing key does not import (a secret key without a passphrase is needed)"
                .into(),
        );
    }
    let input = home.path().join("payload");
    let output = home.path().join("payload.sig");
    std::fs::write(&input, payload).map_err(|e| e.to_string())?;
    let out = gpg(&[
        "--output",
        &output.to_string_lossy(),
        "--sign",
        &input.to_string_lossy(),
    ])?;
    if !out.status.success() {
        return Err(format!(
            "gpg --sign: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    std::fs::read(&output).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new key in a GnuPG home of its own: (armored secret key, armored public key).
    fn key(name: &str) -> (Vec<u8>, Vec<u8>) {
        let home = tempfile::tempdir().expect("home");
        let gpg = |args: &[&str]| {
            let out = Command::new("gpg")
                .arg("--homedir")
                .arg(home.path())
                .args(["--batch", "--pinentry-mode", "loopback", "--passphrase", ""])
                .args(args)
                .output()
                .expect("gpg (CI installs gnupg)");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            out.stdout
        };
        gpg(&[
            "--quick-gen-key",
            &format!("{name} <{name}@site.test>"),
            "ed25519",
            "sign",
            "never",
        ]);
        (
            gpg(&["--armor", "--export-secret-keys"]),
            gpg(&["--armor", "--export"]),
        )
    }

    #[test]
    fn what_a_key_signs_verifies_with_that_key_alone() {
        let (secret, public) = key("site");
        let (_, other) = key("other");
        let signed = gpg_sign(b"{\"critical\": {}}", &secret).expect("signed");
        let payload = verified(&signed, &Keys(vec![public])).expect("verified");
        assert_eq!(payload, b"{\"critical\": {}}");
        let refused = verified(&signed, &Keys(vec![other])).expect_err("another key");
        assert!(
            refused.contains("not signed by a key of the policy"),
            "{refused}"
        );
    }
}
