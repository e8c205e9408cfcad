//! What a simple signing signature claims (its payload: the manifest's digest and an image
//! identity), and which identities a policy's `signedIdentity` accepts, as containers/image
//! matches them; shared by GPG (`signature.rs`) and sigstore (`sigstore.rs`) signatures.

use serde_json::Value as Json;

use crate::Reference;

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
