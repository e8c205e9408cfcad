//! Image references: `[docker://]registry/repository[:tag][@sha256:digest]`, with Docker's
//! short forms (`rockylinux/rockylinux:9.5` is on docker.io; `ubuntu` is `library/ubuntu`).

use std::fmt;

use oci_layout::Digest;

use crate::error::RegistryError;

/// How a registry's API is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// HTTPS, its certificate verified.
    Https,
    /// HTTPS taking any certificate (a registry the site marks insecure).
    HttpsUnverified,
    /// Plain HTTP.
    Http,
}

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The registry as written (`docker.io`, `127.0.0.1:5000`).
    pub registry: String,
    /// The repository (`library/ubuntu`).
    pub repository: String,
    /// The tag, when the reference has one.
    pub tag: Option<String>,
    /// The digest, when the reference pins one (checked: `sha256:<64 lowercase hex>`).
    pub digest: Option<Digest>,
    /// A registries.conf entry or mirror marked `insecure`: HTTPS without verification, or
    /// plain HTTP.
    pub insecure: bool,
}

fn bad(reference: &str, why: impl Into<String>) -> RegistryError {
    RegistryError::BadReference {
        reference: reference.to_owned(),
        why: why.into(),
    }
}

impl Reference {
    /// Parses `text`; a reference with neither tag nor digest means `:latest`.
    pub fn parse(text: &str) -> Result<Self, RegistryError> {
        let rest = text.strip_prefix("docker://").unwrap_or(text);
        if rest.is_empty() {
            return Err(bad(text, "it is empty"));
        }
        let (rest, digest) = match rest.split_once('@') {
            Some((name, digest)) => {
                let hex = digest.strip_prefix("sha256:").ok_or_else(|| {
                    bad(
                        text,
                        "only sha256 digests are supported (@sha256:<64 hex digits>)",
                    )
                })?;
                // Upper-case hex is taken, as written in lower case.
                let digest = Digest::parse(&format!("sha256:{}", hex.to_ascii_lowercase()))
                    .map_err(|_| bad(text, "a sha256 digest has 64 hex digits"))?;
                (name, Some(digest))
            }
            None => (rest, None),
        };
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match rest[last_slash..].rfind(':') {
            Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
            None => (rest, None),
        };
        if let Some(tag) = tag {
            let valid = !tag.is_empty()
                && tag.len() <= 128
                && !tag.starts_with(['.', '-'])
                && tag
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
            if !valid {
                return Err(bad(text, format!("'{tag}' is not a valid tag")));
            }
        }
        let (registry, repository) = match name.split_once('/') {
            Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => {
                (first.to_owned(), rest.to_owned())
            }
            _ => ("docker.io".to_owned(), name.to_owned()),
        };
        let repository = if registry == "docker.io" && !repository.contains('/') {
            format!("library/{repository}")
        } else {
            repository
        };
        let valid_repo = !repository.is_empty()
            && repository.split('/').all(|part| {
                !part.is_empty()
                    && part.chars().all(|c| {
                        c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
                    })
            });
        if !valid_repo {
            return Err(bad(
                text,
                format!("'{repository}' is not a repository name (lower-case letters, digits, '.', '_', '-', '/')"),
            ));
        }
        Ok(Self {
            registry,
            repository,
            tag: tag.map(str::to_owned),
            digest,
            insecure: false,
        })
    }

    /// What to ask the registry for: the digest if pinned, else the tag, else `latest`.
    pub fn target(&self) -> &str {
        self.digest
            .as_ref()
            .map(Digest::as_str)
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// How the registry's API is reached, in the order to try. A registry marked insecure
    /// (registries.conf, `IMGBUILD_INSECURE_REGISTRIES`, comma-separated) is HTTPS without
    /// verification, else plain HTTP, as containers/image reaches it; a loopback registry is
    /// HTTPS, verified, else plain HTTP (Docker's rule for such hosts); any other is HTTPS.
    pub fn schemes(&self) -> &'static [Scheme] {
        if self.registry == "docker.io" {
            return &[Scheme::Https];
        }
        let listed = std::env::var("IMGBUILD_INSECURE_REGISTRIES")
            .map(|list| list.split(',').any(|r| r.trim() == self.registry))
            .unwrap_or(false);
        if listed || self.insecure {
            return &[Scheme::HttpsUnverified, Scheme::Http];
        }
        let host = self
            .registry
            .rsplit_once(':')
            .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
            .map_or(self.registry.as_str(), |(host, _)| host);
        if matches!(host, "localhost" | "[::1]") || host.starts_with("127.") {
            return &[Scheme::Https, Scheme::Http];
        }
        &[Scheme::Https]
    }

    /// The base URL of the registry's API by `scheme` (`https://registry-1.docker.io`).
    pub fn api_base(&self, scheme: Scheme) -> String {
        if self.registry == "docker.io" {
            return "https://registry-1.docker.io".into();
        }
        let prefix = match scheme {
            Scheme::Https | Scheme::HttpsUnverified => "https",
            Scheme::Http => "http",
        };
        format!("{prefix}://{}", self.registry)
    }

    /// The same repository with another tag.
    pub fn with_tag(&self, tag: &str) -> Self {
        Self {
            tag: Some(tag.to_owned()),
            digest: None,
            ..self.clone()
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Reference {
        Reference::parse(text).expect(text)
    }

    #[test]
    fn docker_hub_short_forms() {
        let r = parse("docker.io/rockylinux/rockylinux:9.5");
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.target()),
            ("docker.io", "rockylinux/rockylinux", "9.5")
        );
        assert_eq!(parse("ubuntu").repository, "library/ubuntu");
        assert_eq!(parse("ubuntu").target(), "latest");
        let hub = parse("ubuntu");
        assert_eq!(hub.schemes(), &[Scheme::Https]);
        assert_eq!(hub.api_base(Scheme::Https), "https://registry-1.docker.io");
    }

    #[test]
    fn registries_with_ports_and_digests() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let r = parse(&format!("docker://127.0.0.1:5000/site/compute:v1@{digest}"));
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "site/compute");
        assert_eq!(r.tag.as_deref(), Some("v1"));
        assert_eq!(r.target(), digest);
        assert_eq!(
            r.digest.as_ref().map(Digest::hex),
            Some("a".repeat(64).as_str())
        );
        assert_eq!(
            r.to_string(),
            format!("127.0.0.1:5000/site/compute:v1@{digest}")
        );
        assert_eq!(r.schemes(), &[Scheme::Https, Scheme::Http]);
        assert_eq!(r.api_base(Scheme::Http), "http://127.0.0.1:5000");
        assert_eq!(
            parse("localhost/x").schemes(),
            &[Scheme::Https, Scheme::Http]
        );
        let ghcr = parse("ghcr.io/a/b");
        assert_eq!(ghcr.schemes(), &[Scheme::Https]);
        assert_eq!(ghcr.api_base(Scheme::Https), "https://ghcr.io");
        let insecure = Reference {
            insecure: true,
            ..ghcr
        };
        assert_eq!(insecure.schemes(), &[Scheme::HttpsUnverified, Scheme::Http]);
        assert_eq!(parse("ghcr.io/a/b:1").to_string(), "ghcr.io/a/b:1");
    }

    #[test]
    fn refuses_bad_references() {
        for bad in [
            "",
            "Upper/Case",
            "a/b:",
            "a/b:-x",
            "a@sha256:12",
            "a@md5:00",
            "a//b",
        ] {
            assert!(Reference::parse(bad).is_err(), "{bad}");
        }
    }
}
