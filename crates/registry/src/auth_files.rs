//! Where podman and skopeo keep registry credentials (containers-auth.json(5)), read in their
//! order: `$REGISTRY_AUTH_FILE` alone when set; else `$XDG_RUNTIME_DIR/containers/auth.json`
//! (`/run/containers/$UID/auth.json` without it),
//! `$XDG_CONFIG_HOME/containers/auth.json` (`~/.config/...`), `$DOCKER_CONFIG/config.json`
//! (`~/.docker/config.json`) and `~/.dockercfg`. In each, the most specific key first
//! (`registry/namespace/repo`, then its parents, then the registry), and a credential helper
//! (`credHelpers` for the registry, else `credsStore`) run as podman runs it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine;
use serde::Deserialize;

use crate::auth::{Credentials, CredentialsSource};
use crate::error::RegistryError;

/// The auth files to read, in order.
pub(crate) fn auth_files() -> Vec<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(file) = var("REGISTRY_AUTH_FILE") {
        return vec![file];
    }
    let home = var("HOME");
    let config = var("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
    let docker = var("DOCKER_CONFIG").or_else(|| home.as_ref().map(|h| h.join(".docker")));
    // Without XDG_RUNTIME_DIR (a root shell under sudo), containers/image reads the runtime
    // folder's usual place, where `sudo skopeo login` writes.
    let runtime = match var("XDG_RUNTIME_DIR") {
        Some(dir) => Some(dir.join("containers/auth.json")),
        None => uid().map(|u| PathBuf::from(format!("/run/containers/{u}/auth.json"))),
    };
    [
        runtime,
        config.map(|d| d.join("containers/auth.json")),
        docker.map(|d| d.join("config.json")),
        home.map(|h| h.join(".dockercfg")),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// This process's user id, from `/proc/self/status`.
fn uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[derive(Deserialize, Default)]
struct AuthFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: BTreeMap<String, String>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
}

#[derive(Deserialize)]
struct AuthEntry {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

impl Credentials {
    /// The credentials for `registry`'s `repository` where podman would find them
    /// (`auth_files.rs`): a key naming the repository or one of its namespaces before the
    /// registry's own, as containers-auth.json(5) reads them.
    pub fn for_reference(registry: &str, repository: &str) -> Result<Option<Self>, RegistryError> {
        lookup(registry, repository)
    }
}

/// The credentials of an auth file's entry for `registry` (`auth`, or `username` and
/// `password`); none when it has neither.
fn from_entry(
    entry: &AuthEntry,
    registry: &str,
    path: &Path,
) -> Result<Option<Credentials>, RegistryError> {
    let invalid = |detail: String| RegistryError::Invalid {
        what: path.display().to_string(),
        detail,
    };
    let (username, password) = match (&entry.auth, &entry.username, &entry.password) {
        (Some(auth), _, _) => {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth.trim())
                .map_err(|_| invalid(format!("the auth of {registry} is not base64")))?;
            let decoded = String::from_utf8(decoded)
                .map_err(|_| invalid(format!("the auth of {registry} is not text")))?;
            let (u, p) = decoded
                .split_once(':')
                .ok_or_else(|| invalid(format!("the auth of {registry} is not user:password")))?;
            (u.to_owned(), p.to_owned())
        }
        (None, Some(u), Some(p)) => (u.clone(), p.clone()),
        _ => return Ok(None),
    };
    let mut found = Credentials::new(&username, &password);
    found.source = CredentialsSource::File(path.to_owned());
    Ok(Some(found))
}

/// The keys for `registry`'s `repository`, most specific first.
pub(crate) fn keys_for(registry: &str, repository: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut path = format!("{registry}/{repository}");
    while let Some((parent, _)) = path.rsplit_once('/') {
        if !repository.is_empty() {
            keys.push(path.clone());
        }
        path = parent.to_owned();
        if path == registry {
            break;
        }
    }
    keys.extend([
        registry.to_owned(),
        format!("https://{registry}"),
        format!("http://{registry}"),
    ]);
    if registry == "docker.io" {
        keys.extend([
            "https://index.docker.io/v1/".to_owned(),
            "index.docker.io".to_owned(),
            "registry-1.docker.io".to_owned(),
        ]);
    }
    keys
}

/// The credentials for `registry`'s `repository` in the first place that has some.
pub(crate) fn lookup(
    registry: &str,
    repository: &str,
) -> Result<Option<Credentials>, RegistryError> {
    lookup_in(&auth_files(), registry, repository)
}

/// [`lookup`] over the auth files `paths`.
pub(crate) fn lookup_in(
    paths: &[PathBuf],
    registry: &str,
    repository: &str,
) -> Result<Option<Credentials>, RegistryError> {
    for path in paths {
        let path = path.as_path();
        if !path.is_file() {
            continue;
        }
        let text =
            std::fs::read(path).map_err(crate::error::io(format!("reading {}", path.display())))?;
        let legacy = path.file_name().is_some_and(|n| n == ".dockercfg");
        let file: AuthFile = if legacy {
            // ~/.dockercfg is the `auths` mapping itself.
            let auths = serde_json::from_slice(&text)
                .map_err(|e| invalid(path, format!("not an auth file ({e})")))?;
            AuthFile {
                auths,
                ..AuthFile::default()
            }
        } else {
            serde_json::from_slice(&text)
                .map_err(|e| invalid(path, format!("not an auth file ({e})")))?
        };
        let keys = keys_for(registry, repository);
        let entry = keys.iter().find_map(|k| {
            file.auths
                .get(k.trim_end_matches('/'))
                .or_else(|| file.auths.get(k))
        });
        if let Some(entry) = entry {
            if let Some(found) = from_entry(entry, registry, path)? {
                return Ok(Some(found));
            }
        }
        let helper = file
            .cred_helpers
            .get(registry)
            .or(file.creds_store.as_ref());
        if let Some(helper) = helper {
            if let Some(found) = from_helper(helper, registry)? {
                return Ok(Some(found));
            }
        }
    }
    Ok(None)
}

fn invalid(path: &Path, detail: String) -> RegistryError {
    RegistryError::Invalid {
        what: path.display().to_string(),
        detail,
    }
}

#[derive(Deserialize)]
struct HelperAnswer {
    #[serde(rename = "Username")]
    username: String,
    #[serde(rename = "Secret")]
    secret: String,
}

/// `docker-credential-<helper> get` with the registry on its input, as podman runs it; none
/// when the helper says it has no credentials for it.
fn from_helper(helper: &str, registry: &str) -> Result<Option<Credentials>, RegistryError> {
    let program = format!("docker-credential-{helper}");
    let failed = |detail: String| RegistryError::Unauthorized {
        registry: registry.to_owned(),
        detail,
    };
    let mut child = Command::new(&program)
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("the credential helper {program} (credHelpers/credsStore) cannot run: {e}; install it or take it out of the auth file")))?;
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(registry.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| failed(format!("the credential helper {program}: {e}")))?;
    if !out.status.success() {
        // "credentials not found in native keychain": the helper has none for this registry.
        return Ok(None);
    }
    let answer: HelperAnswer = serde_json::from_slice(&out.stdout).map_err(|_| {
        failed(format!(
            "the credential helper {program} did not answer with Username and Secret"
        ))
    })?;
    let mut found = Credentials::new(&answer.username, &answer.secret);
    found.source = CredentialsSource::Helper(program);
    Ok(Some(found))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_runtime_folder_the_file_is_under_run_containers() {
        // The only test of this crate that touches the environment.
        std::env::remove_var("REGISTRY_AUTH_FILE");
        std::env::remove_var("XDG_RUNTIME_DIR");
        let uid = uid().expect("this process's uid");
        let files = auth_files();
        assert_eq!(
            files.first(),
            Some(&PathBuf::from(format!("/run/containers/{uid}/auth.json")))
        );
    }

    #[test]
    fn keys_go_from_the_repository_to_the_registry() {
        assert_eq!(
            keys_for("registry.site:5000", "hpc/images/rocky"),
            vec![
                "registry.site:5000/hpc/images/rocky",
                "registry.site:5000/hpc/images",
                "registry.site:5000/hpc",
                "registry.site:5000",
                "https://registry.site:5000",
                "http://registry.site:5000",
            ]
        );
        assert_eq!(keys_for("quay.io", "")[0], "quay.io");
    }
}
