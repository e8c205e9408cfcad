//! The site's signature policy, `policy.json`, as containers/image reads it (skopeo, podman and
//! buildah honour the same file): which images may be pulled, per transport and scope. A base
//! from a registry is checked against the requirements of the most specific `docker` scope
//! that matches its reference (the reference with its tag, the repository, its parent
//! namespaces, the host, a `*.domain` wildcard, the transport's default, the policy's
//! default); every requirement must hold. `insecureAcceptAnything` and `reject` are decided
//! here; `signedBy` (GPG simple signing, from the lookaside `registries.d` names) by
//! `signature.rs`, `sigstoreSigned` (cosign's attached signatures, with a public key) by
//! `sigstore.rs`. What imgbuild cannot verify (keyless Fulcio signing) never lets a base
//! through.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value as Json;

use crate::Reference;

/// One requirement of a scope.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type")]
pub enum Requirement {
    /// Anything is accepted.
    #[serde(rename = "insecureAcceptAnything")]
    InsecureAcceptAnything,
    /// Nothing is.
    #[serde(rename = "reject")]
    Reject,
    /// A GPG simple signing signature by one of the keys.
    #[serde(rename = "signedBy", rename_all = "camelCase")]
    SignedBy {
        /// `GPGKeys` (the only kind containers/image knows).
        key_type: String,
        /// A file of public keys.
        key_path: Option<PathBuf>,
        /// Files of public keys.
        key_paths: Option<Vec<PathBuf>>,
        /// Public keys, base64.
        key_data: Option<String>,
        /// Which identity the signature must claim (default `matchRepoDigestOrExact`).
        signed_identity: Option<Json>,
    },
    /// A sigstore signature (cosign's format) by one of the keys.
    #[serde(rename = "sigstoreSigned", rename_all = "camelCase")]
    SigstoreSigned {
        /// A public key file (PEM).
        key_path: Option<PathBuf>,
        /// Public key files.
        key_paths: Option<Vec<PathBuf>>,
        /// A public key, base64 of its PEM.
        key_data: Option<String>,
        /// Keyless signing (Fulcio certificates), which imgbuild does not check.
        fulcio: Option<Json>,
        /// Which identity the signature must claim (default `matchRepoDigestOrExact`).
        signed_identity: Option<Json>,
    },
}

/// `policy.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct Policy {
    /// Requirements where no transport scope matches.
    pub default: Vec<Requirement>,
    /// Per transport (`docker`, ...), per scope.
    #[serde(default)]
    pub transports: BTreeMap<String, BTreeMap<String, Vec<Requirement>>>,
}

/// Where the policy was read from, and what it says.
#[derive(Debug, Clone)]
pub struct SitePolicy {
    /// The file.
    pub path: PathBuf,
    /// Its requirements.
    pub policy: Policy,
}

/// The policy file containers/image would read: `explicit` (`--signature-policy`), else the
/// user's `~/.config/containers/policy.json`, else `/etc/containers/policy.json`; `None` when
/// there is none (every base is pulled, as before a site sets one).
pub fn load(explicit: Option<&Path>) -> Result<Option<SitePolicy>, String> {
    let candidates: Vec<PathBuf> = match explicit {
        Some(path) => vec![path.to_owned()],
        None => std::env::var_os("HOME")
            .map(|home| Path::new(&home).join(".config/containers/policy.json"))
            .into_iter()
            .chain([PathBuf::from("/etc/containers/policy.json")])
            .collect(),
    };
    let Some(path) = candidates
        .into_iter()
        .find(|p| explicit.is_some() || p.is_file())
    else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let policy: Policy = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not a signature policy containers/image reads: {e}",
            path.display()
        )
    })?;
    Ok(Some(SitePolicy { path, policy }))
}

impl Policy {
    /// The requirements for a `docker` reference, and the scope they were found under
    /// (`""` for the transport's default, `default` for the policy's).
    pub fn requirements(&self, reference: &Reference) -> (&[Requirement], String) {
        let docker = self.transports.get("docker");
        for scope in docker_scopes(reference) {
            if let Some(found) = docker.and_then(|scopes| scopes.get(&scope)) {
                return (found, scope);
            }
        }
        (&self.default, "default".to_owned())
    }
}

/// The scopes of a docker reference, most specific first, as containers/image tries them.
fn docker_scopes(reference: &Reference) -> Vec<String> {
    let repo = format!("{}/{}", reference.registry, reference.repository);
    let mut scopes = Vec::new();
    if let Some(digest) = &reference.digest {
        scopes.push(format!("{repo}@{digest}"));
    } else if let Some(tag) = &reference.tag {
        scopes.push(format!("{repo}:{tag}"));
    }
    let mut namespace = repo.as_str();
    scopes.push(namespace.to_owned());
    while let Some((parent, _)) = namespace.rsplit_once('/') {
        scopes.push(parent.to_owned());
        namespace = parent;
    }
    // `*.example.com` for a host below example.com (not for the host itself).
    let host = reference.registry.split(':').next().unwrap_or("");
    let mut rest = host;
    while let Some((_, parent)) = rest.split_once('.') {
        scopes.push(format!("*.{parent}"));
        rest = parent;
    }
    scopes.push(String::new());
    scopes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(text: &str) -> Policy {
        serde_json::from_str(text).expect("policy")
    }

    fn reference(text: &str) -> Reference {
        Reference::parse(text).expect("reference")
    }

    #[test]
    fn the_most_specific_scope_decides() {
        let p = policy(
            r#"{"default": [{"type": "reject"}],
                "transports": {"docker": {
                    "": [{"type": "insecureAcceptAnything"}],
                    "registry.site:5000/hpc": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "/k.gpg"}],
                    "registry.site:5000/hpc/base:9": [{"type": "reject"}],
                    "*.site": [{"type": "sigstoreSigned", "keyPath": "/k.pub"}]}}}"#,
        );
        let scope = |r: &str| p.requirements(&reference(r)).1;
        assert_eq!(
            scope("registry.site:5000/hpc/base:9"),
            "registry.site:5000/hpc/base:9"
        );
        assert_eq!(
            scope("registry.site:5000/hpc/base:10"),
            "registry.site:5000/hpc"
        );
        assert_eq!(scope("mirror.site/other:1"), "*.site");
        assert_eq!(scope("quay.io/x/y:1"), "");
        let (found, _) = p.requirements(&reference("registry.site:5000/hpc/base:10"));
        assert!(matches!(found, [Requirement::SignedBy { .. }]));
    }

    #[test]
    fn a_policy_without_transports_has_its_default() {
        let p = policy(r#"{"default": [{"type": "insecureAcceptAnything"}]}"#);
        let (found, scope) = p.requirements(&reference("docker.io/library/debian:12"));
        assert!(matches!(found, [Requirement::InsecureAcceptAnything]));
        assert_eq!(scope, "default");
    }

    #[test]
    fn an_unknown_requirement_is_an_error() {
        let bad = serde_json::from_str::<Policy>(r#"{"default": [{"type": "trustMe"}]}"#);
        assert!(bad.is_err());
    }
}
