//! Where a registry's GPG signatures are: the `lookaside` (or older `sigstore`) URL that
//! `registries.d` gives the most specific namespace of a reference, else `default-docker`'s,
//! as containers/image reads `~/.config/containers/registries.d` (when there is one) or
//! `/etc/containers/registries.d`; and the signature files themselves, over `file://`,
//! `http://` or `https://`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::Reference;

/// One namespace's settings.
#[derive(Debug, Default, Clone, Deserialize)]
struct Namespace {
    lookaside: Option<String>,
    sigstore: Option<String>,
}

impl Namespace {
    fn url(&self) -> Option<&str> {
        self.lookaside.as_deref().or(self.sigstore.as_deref())
    }
}

/// One `registries.d` file.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Config {
    default_docker: Option<Namespace>,
    #[serde(default)]
    docker: BTreeMap<String, Namespace>,
}

/// The `registries.d` folder containers/image reads.
fn folder() -> PathBuf {
    std::env::var_os("HOME")
        .map(|home| Path::new(&home).join(".config/containers/registries.d"))
        .filter(|user| user.is_dir())
        .unwrap_or_else(|| PathBuf::from("/etc/containers/registries.d"))
}

/// The lookaside URL for `reference`, or why there is none.
pub fn base(reference: &Reference) -> Result<String, String> {
    let dir = folder();
    let mut configs = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    for file in files {
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let config: Config = serde_yaml::from_str(&text)
            .map_err(|e| format!("{}: not a registries.d file: {e}", file.display()))?;
        configs.push(config);
    }
    let repo = format!("{}/{}", reference.registry, reference.repository);
    let mut namespace = repo.as_str();
    loop {
        if let Some(url) = configs
            .iter()
            .find_map(|c| c.docker.get(namespace).and_then(Namespace::url))
        {
            return Ok(url.to_owned());
        }
        match namespace.rsplit_once('/') {
            Some((parent, _)) => namespace = parent,
            None => break,
        }
    }
    configs
        .iter()
        .find_map(|c| c.default_docker.as_ref().and_then(Namespace::url))
        .map(str::to_owned)
        .ok_or_else(|| {
            format!(
                "it requires a GPG signature, and {} names no lookaside for {repo} (docker: {repo}: lookaside: URL, or default-docker)",
                dir.display()
            )
        })
}

/// The bytes at `url`, `None` when there is nothing there (the end of the signatures).
pub fn fetch(url: &str) -> Result<Option<Vec<u8>>, String> {
    if let Some(path) = url.strip_prefix("file://") {
        return match std::fs::read(path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{url}: {e}")),
        };
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!(
            "lookaside {url}: only file://, http:// and https:// are read"
        ));
    }
    let limits = net::Limits {
        connect: std::time::Duration::from_secs(30),
        read: Some(std::time::Duration::from_secs(60)),
        total: Some(std::time::Duration::from_secs(120)),
        redirects: 5,
    };
    let agent = net::Agents::system(limits)
        .map_err(|e| format!("{url}: {e}"))?
        .for_url(url)
        .map_err(|e| format!("{url}: {e}"))?;
    match agent.get(url).call() {
        Ok(response) => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut response.into_reader(), &mut bytes)
                .map_err(|e| format!("{url}: {e}"))?;
            Ok(Some(bytes))
        }
        Err(ureq::Error::Status(404, _)) => Ok(None),
        Err(e) => Err(format!("{url}: {e}")),
    }
}
