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
#[serde(rename_all = "kebab-case")]
struct Namespace {
    lookaside: Option<String>,
    sigstore: Option<String>,
    lookaside_staging: Option<String>,
    sigstore_staging: Option<String>,
    use_sigstore_attachments: Option<bool>,
}

impl Namespace {
    fn url(&self) -> Option<&str> {
        self.lookaside.as_deref().or(self.sigstore.as_deref())
    }

    /// Where signatures are written: the staging URL, else the lookaside itself.
    fn staging(&self) -> Option<&str> {
        self.lookaside_staging
            .as_deref()
            .or(self.sigstore_staging.as_deref())
            .or_else(|| self.url())
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

/// One `registries.d` file's text as its settings.
fn parse_config(text: &str) -> Result<Config, String> {
    let json = crate::yaml::parse(text)?;
    if json.is_null() {
        return Ok(Config::default());
    }
    serde_json::from_value(json).map_err(|e| e.to_string())
}

/// The `registries.d` folder containers/image reads.
fn folder() -> PathBuf {
    std::env::var_os("HOME")
        .map(|home| Path::new(&home).join(".config/containers/registries.d"))
        .filter(|user| user.is_dir())
        .unwrap_or_else(|| PathBuf::from("/etc/containers/registries.d"))
}

/// The `registries.d` files, in name order.
fn configs() -> Result<(PathBuf, Vec<Config>), String> {
    let dir = folder();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut configs = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let config = parse_config(&text)
            .map_err(|e| format!("{}: not a registries.d file: {e}", file.display()))?;
        configs.push(config);
    }
    Ok((dir, configs))
}

/// The setting `pick` gives for the most specific namespace of `reference` that has one, else
/// `default-docker`'s.
fn setting<T>(
    configs: &[Config],
    reference: &Reference,
    pick: impl Fn(&Namespace) -> Option<T>,
) -> Option<T> {
    let repo = format!("{}/{}", reference.registry, reference.repository);
    let mut namespace = repo.as_str();
    loop {
        if let Some(found) = configs
            .iter()
            .find_map(|c| c.docker.get(namespace).and_then(&pick))
        {
            return Some(found);
        }
        match namespace.rsplit_once('/') {
            Some((parent, _)) => namespace = parent,
            None => break,
        }
    }
    configs
        .iter()
        .find_map(|c| c.default_docker.as_ref().and_then(&pick))
}

/// The lookaside URL for `reference`, or why there is none.
pub fn base(reference: &Reference) -> Result<String, String> {
    let (dir, configs) = configs()?;
    setting(&configs, reference, |n| n.url().map(str::to_owned)).ok_or_else(|| {
        format!(
            "it requires a GPG signature, and {} names no lookaside for {}/{} (docker: <namespace>: lookaside: URL, or default-docker)",
            dir.display(),
            reference.registry,
            reference.repository
        )
    })
}

/// Whether `registries.d` has sigstore signatures read from the registry (cosign's attached
/// `sha256-<hex>.sig`) for `reference`.
pub fn uses_sigstore_attachments(reference: &Reference) -> Result<bool, String> {
    let (_, configs) = configs()?;
    Ok(setting(&configs, reference, |n| n.use_sigstore_attachments).unwrap_or(false))
}

/// Writes `signature` of the manifest `digest` of `reference` as the next `signature-N` of the
/// `file://` staging lookaside `registries.d` names: where it went.
pub fn stage(reference: &Reference, digest: &str, signature: &[u8]) -> Result<String, String> {
    let (dir, configs) = configs()?;
    let staging =
        setting(&configs, reference, |n| n.staging().map(str::to_owned)).ok_or_else(|| {
            format!(
                "{} names no lookaside-staging for {}/{}, where a GPG signature is written",
                dir.display(),
                reference.registry,
                reference.repository
            )
        })?;
    let root = staging.strip_prefix("file://").ok_or_else(|| {
        format!("lookaside-staging {staging}: only a file:// folder can be written")
    })?;
    let (algorithm, hex) = digest.split_once(':').unwrap_or(("sha256", digest));
    let folder = Path::new(root).join(format!("{}@{algorithm}={hex}", reference.repository));
    std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let free = (1..)
        .map(|n| folder.join(format!("signature-{n}")))
        .find(|path| !path.exists())
        .unwrap_or_else(|| folder.join("signature-1"));
    std::fs::write(&free, signature).map_err(|e| format!("{}: {e}", free.display()))?;
    Ok(free.display().to_string())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registries_d_file_gives_each_namespace_its_settings() {
        let config = parse_config(
            "default-docker:\n  lookaside: file:///var/lib/containers/sigstore\n\
             docker:\n  registry.example:5000/site:\n    lookaside: https://sigs.example/site\n\
             \x20   lookaside-staging: file:///srv/staging\n    use-sigstore-attachments: true\n",
        )
        .expect("parses");
        let site = &config.docker["registry.example:5000/site"];
        assert_eq!(site.url(), Some("https://sigs.example/site"));
        assert_eq!(site.staging(), Some("file:///srv/staging"));
        assert_eq!(site.use_sigstore_attachments, Some(true));
        assert_eq!(
            config.default_docker.as_ref().and_then(Namespace::url),
            Some("file:///var/lib/containers/sigstore")
        );
        assert!(parse_config("").expect("empty").docker.is_empty());
        assert!(parse_config("docker: [1, 2]").is_err());
    }
}
