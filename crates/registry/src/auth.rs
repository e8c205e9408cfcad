//! Registry credentials (where podman keeps them: `auth_files.rs`) and the `WWW-Authenticate`
//! challenges that say how to use them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use base64::Engine;

/// A user name and password. `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user name.
    pub username: String,
    password: String,
    /// Where they came from, for messages.
    pub source: CredentialsSource,
}

/// Where credentials came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialsSource {
    /// An auth file (`REGISTRY_AUTH_FILE`, `~/.docker/config.json`).
    File(PathBuf),
    /// A credential helper (`docker-credential-<name>`).
    Helper(String),
    /// Given by the caller.
    Given,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<hidden>")
            .field("source", &self.source)
            .finish()
    }
}

impl fmt::Display for CredentialsSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CredentialsSource::File(path) => write!(f, "{}", path.display()),
            CredentialsSource::Helper(program) => write!(f, "the credential helper {program}"),
            CredentialsSource::Given => write!(f, "the command line"),
        }
    }
}

impl Credentials {
    /// Credentials given directly.
    pub fn new(username: &str, password: &str) -> Self {
        Self {
            username: username.to_owned(),
            password: password.to_owned(),
            source: CredentialsSource::Given,
        }
    }

    /// The `Authorization: Basic ...` value.
    pub(crate) fn basic(&self) -> String {
        let pair = format!("{}:{}", self.username, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    }

    /// Removes the password (and its base64 forms) from `text`, for error messages that quote
    /// a server's answer.
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.password.is_empty() {
            return text.to_owned();
        }
        let basic = self.basic();
        let encoded = basic.trim_start_matches("Basic ");
        text.replace(encoded, "<hidden>")
            .replace(&self.password, "<hidden>")
    }
}

/// A `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// `bearer` or `basic` (lower-case).
    pub scheme: String,
    /// Its parameters (`realm`, `service`, `scope`).
    pub params: BTreeMap<String, String>,
}

impl Challenge {
    /// Parses `Bearer realm="https://auth/token",service="registry",scope="repository:a:pull"`.
    pub fn parse(header: &str) -> Option<Self> {
        let header = header.trim();
        let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
        let mut params = BTreeMap::new();
        let mut rest = rest.trim();
        while !rest.is_empty() {
            let (key, after) = rest.split_once('=')?;
            let key = key.trim().to_ascii_lowercase();
            let after = after.trim_start();
            let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
                let end = quoted.find('"')?;
                (&quoted[..end], &quoted[end + 1..])
            } else {
                let end = after.find(',').unwrap_or(after.len());
                (&after[..end], &after[end..])
            };
            params.insert(key, value.to_owned());
            rest = next.trim_start().trim_start_matches(',').trim_start();
        }
        Some(Self {
            scheme: scheme.to_ascii_lowercase(),
            params,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges() {
        let c = Challenge::parse(
            r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull""#,
        )
        .expect("parses");
        assert_eq!(c.scheme, "bearer");
        assert_eq!(c.params["realm"], "https://auth.docker.io/token");
        assert_eq!(c.params["scope"], "repository:library/ubuntu:pull");
        let basic = Challenge::parse("Basic realm=\"Registry Realm\"").expect("parses");
        assert_eq!(basic.scheme, "basic");
        assert_eq!(basic.params["realm"], "Registry Realm");
    }

    #[test]
    fn auth_files_in_both_forms() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("auth.json");
        let auth = base64::engine::general_purpose::STANDARD.encode("bob:s3cret");
        std::fs::write(
            &path,
            format!(
                r#"{{"auths": {{"127.0.0.1:5000": {{"auth": "{auth}"}}, "https://index.docker.io/v1/": {{"username": "hub", "password": "pw"}}}}}}"#
            ),
        )
        .expect("write");
        let from_file = |path: &std::path::Path, registry: &str| {
            crate::auth_files::lookup_in(&[path.to_owned()], registry, "")
        };
        let local = from_file(&path, "127.0.0.1:5000")
            .expect("ok")
            .expect("found");
        assert_eq!(local.username, "bob");
        assert_eq!(local.basic(), format!("Basic {auth}"));
        assert!(!format!("{local:?}").contains("s3cret"));
        assert_eq!(
            local.redact(&format!("denied s3cret {auth}")),
            "denied <hidden> <hidden>"
        );
        let hub = from_file(&path, "docker.io").expect("ok").expect("found");
        assert_eq!(hub.username, "hub");
        assert!(from_file(&path, "ghcr.io").expect("ok").is_none());
    }

    #[test]
    fn a_broken_auth_file_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("auth.json");
        std::fs::write(&path, r#"{"auths": {"r": {"auth": "%%%"}}}"#).expect("write");
        let err = crate::auth_files::lookup_in(&[path], "r", "").expect_err("bad base64");
        assert!(err.to_string().contains("auth.json"), "{err}");
    }
}
