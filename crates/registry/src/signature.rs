//! Checking a pulled image against the site's policy (`policy.rs`): sigstore signatures (see
//! `sigstore.rs`) and GPG simple signing signatures, found where `registries.d` says (the lookaside, `file://` or `http(s)://`, as
//! `skopeo copy --sign-by` writes them), verified with `gpg` against the policy's keys only,
//! their payload naming the manifest's digest and an identity the policy accepts.

use std::path::PathBuf;
use std::process::Command;

use base64::Engine;
use serde_json::Value as Json;

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

/// What identity a signature must claim (`signedIdentity`).
pub(crate) enum Identity {
    /// The reference itself when it has a tag; its repository when it has a digest.
    RepoDigestOrExact,
    Exact,
    Repository,
    ExactReference(String),
    ExactRepository(String),
}

impl Identity {
    pub(crate) fn of(json: Option<&Json>) -> Result<Self, String> {
        let Some(json) = json else {
            return Ok(Self::RepoDigestOrExact);
        };
        let field = |name: &str| {
            json.get(name)
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_owned()
        };
        Ok(match json.get("type").and_then(Json::as_str) {
            Some("matchRepoDigestOrExact") => Self::RepoDigestOrExact,
            Some("matchExact") => Self::Exact,
            Some("matchRepository") => Self::Repository,
            Some("exactReference") => Self::ExactReference(field("dockerReference")),
            Some("exactRepository") => Self::ExactRepository(field("dockerRepository")),
            other => {
                return Err(format!(
                    "signedIdentity {} is not one imgbuild checks (matchRepoDigestOrExact, matchExact, matchRepository, exactReference, exactRepository)",
                    other.unwrap_or("without a type")
                ))
            }
        })
    }

    /// Whether a signature claiming `claimed` (`host/repo:tag` or `host/repo@digest`) is one for
    /// `reference`.
    fn accepts(&self, reference: &Reference, claimed: &str) -> bool {
        let repo = format!("{}/{}", reference.registry, reference.repository);
        let claimed_repo = claimed
            .split_once('@')
            .map(|(r, _)| r)
            .unwrap_or_else(|| match claimed.rsplit_once(':') {
                Some((r, tag)) if !tag.contains('/') => r,
                _ => claimed,
            });
        let exact = match (&reference.digest, &reference.tag) {
            (Some(digest), _) => format!("{repo}@{digest}"),
            (None, Some(tag)) => format!("{repo}:{tag}"),
            (None, None) => format!("{repo}:latest"),
        };
        match self {
            Self::RepoDigestOrExact if reference.digest.is_some() => claimed_repo == repo,
            Self::RepoDigestOrExact | Self::Exact => claimed == exact,
            Self::Repository => claimed_repo == repo,
            Self::ExactReference(wanted) => claimed == wanted,
            Self::ExactRepository(wanted) => claimed_repo == wanted,
        }
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

/// Ok when the simple signing `payload` names `digest` and an identity for `reference`.
pub(crate) fn claims(
    payload: &[u8],
    digest: &str,
    reference: &Reference,
    identity: &Identity,
) -> Result<(), String> {
    let payload: Json =
        serde_json::from_slice(payload).map_err(|e| format!("its payload is not JSON: {e}"))?;
    let critical = &payload["critical"];
    let signed_digest = critical["image"]["docker-manifest-digest"]
        .as_str()
        .unwrap_or("");
    if signed_digest != digest {
        return Err(format!(
            "it signs {signed_digest}, not the manifest {digest}"
        ));
    }
    let claimed = critical["identity"]["docker-reference"]
        .as_str()
        .unwrap_or("");
    if !identity.accepts(reference, claimed) {
        return Err(format!(
            "it signs {claimed}, which the policy's signedIdentity does not accept for {reference}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_match_as_containers_image_matches_them() {
        let tagged = Reference::parse("registry.site:5000/hpc/base:9").expect("ref");
        let by_default = Identity::RepoDigestOrExact;
        assert!(by_default.accepts(&tagged, "registry.site:5000/hpc/base:9"));
        assert!(!by_default.accepts(&tagged, "registry.site:5000/hpc/base:10"));
        assert!(Identity::Repository.accepts(&tagged, "registry.site:5000/hpc/base:10"));
        assert!(!Identity::Repository.accepts(&tagged, "registry.site:5000/hpc/other:9"));
        let other = Identity::ExactRepository("registry.site:5000/hpc/base".into());
        assert!(other.accepts(&tagged, "registry.site:5000/hpc/base:1"));
    }

    #[test]
    fn a_payload_for_another_digest_or_identity_is_refused() {
        let reference = Reference::parse("registry.site:5000/hpc/base:9").expect("ref");
        let payload = |digest: &str, identity: &str| {
            serde_json::json!({"critical": {"identity": {"docker-reference": identity},
                "image": {"docker-manifest-digest": digest}, "type": "atomic container signature"},
                "optional": {}})
            .to_string()
        };
        let mine = payload("sha256:aa", "registry.site:5000/hpc/base:9");
        let id = Identity::RepoDigestOrExact;
        assert!(claims(mine.as_bytes(), "sha256:aa", &reference, &id).is_ok());
        let err = claims(mine.as_bytes(), "sha256:bb", &reference, &id).expect_err("digest");
        assert!(err.contains("sha256:aa"), "{err}");
        let theirs = payload("sha256:aa", "registry.site:5000/hpc/base:10");
        assert!(claims(theirs.as_bytes(), "sha256:aa", &reference, &id).is_err());
    }
}
