//! `mirror.toml`: the site mirror's URL and optional per-path settings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The parsed `mirror.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MirrorConfig {
    /// The site mirror's base URL, seen by recipes as `mirror_server`.
    pub url: Option<String>,
    /// Attempts after the first failed one, for every download (default 3).
    pub retries: Option<u32>,
    /// Seconds a download may send nothing before it counts as stalled (default 30).
    pub timeout_secs: Option<u64>,
    /// The registry repository layers are read from before a role runs
    /// (`docker://HOST/REPO`; `imgbuild build --cache-from` and `IMGBUILD_CACHE_FROM` go first).
    pub cache_from: Option<String>,
    /// The registry repository built layers are written to (`--cache-to`,
    /// `IMGBUILD_CACHE_TO` go first).
    pub cache_to: Option<String>,
    /// Take any TLS certificate from the mirror's host (`url`), as registries.conf's
    /// `insecure` does for a registry; every build warns. Give the site's CA instead where
    /// you can (`SSL_CERT_FILE`, the system's store).
    pub insecure: Option<bool>,
    /// Optional settings per URL path prefix (for example `"/nvidia/"`).
    #[serde(default)]
    pub paths: BTreeMap<String, PathSettings>,
    /// Build secrets the site mounts on its build hosts, by id: the file or folder (relative
    /// to mirror.toml's folder), as `imgbuild build --secret id=ID,src=PATH` names one (the
    /// flag goes first). Only the path is here, never the secret.
    #[serde(default)]
    pub secrets: BTreeMap<String, PathBuf>,
}

/// Settings that apply to every artifact below one URL path prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSettings {
    /// Attempts after the first failed one.
    pub retries: Option<u32>,
    /// Seconds a download may send nothing before it counts as stalled.
    pub timeout_secs: Option<u64>,
}

/// Why `mirror.toml` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum MirrorConfigError {
    /// The file exists but could not be read.
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has unknown keys.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line of the problem.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The `url` is not an http(s) URL.
    #[error("{path}: url '{url}' must start with http:// or https:// (for example url = \"http://mirror.example/\")")]
    BadUrl {
        /// The file.
        path: PathBuf,
        /// The offending value.
        url: String,
    },
}

impl MirrorConfig {
    /// How downloads behave under this config; `timeout` (`--timeout`) overrides every
    /// `timeout_secs`.
    pub fn fetch_options(&self, locked: bool, timeout: Option<u64>) -> crate::FetchOptions {
        let defaults = crate::FetchOptions::default();
        let seconds = |s: u64| std::time::Duration::from_secs(s.max(1));
        crate::FetchOptions {
            attempts: self
                .retries
                .map_or(defaults.attempts, |r| r.saturating_add(1)),
            timeout: timeout
                .or(self.timeout_secs)
                .map_or(defaults.timeout, seconds),
            locked,
            paths: self
                .paths
                .iter()
                .map(|(prefix, path)| crate::PathRule {
                    prefix: prefix.clone(),
                    attempts: path.retries.map(|r| r.saturating_add(1)),
                    timeout: timeout.or(path.timeout_secs).map(seconds),
                })
                .collect(),
            unverified_hosts: match (&self.url, self.insecure) {
                (Some(url), Some(true)) => vec![net::host_of(url)],
                _ => Vec::new(),
            },
            ..defaults
        }
    }

    /// Reads `mirror.toml`; a missing file gives an empty config.
    pub fn load(path: &Path) -> Result<Self, MirrorConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(MirrorConfigError::Read {
                    path: path.to_owned(),
                    source,
                })
            }
        };
        Self::parse(&text, path)
    }

    /// Parses the text of a `mirror.toml`; `path` is used in errors only.
    pub fn parse(text: &str, path: &Path) -> Result<Self, MirrorConfigError> {
        let config: MirrorConfig = toml::from_str(text).map_err(|e| MirrorConfigError::Parse {
            path: path.to_owned(),
            line: e
                .span()
                .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1)
                .unwrap_or(1),
            message: e.message().to_owned(),
        })?;
        if let Some(url) = &config.url {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(MirrorConfigError::BadUrl {
                    path: path.to_owned(),
                    url: url.clone(),
                });
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_url_and_paths() {
        let text = "url = \"http://core014.inband/\"\n[paths.\"/nvidia/\"]\nretries = 5\n";
        let config = MirrorConfig::parse(text, Path::new("mirror.toml")).expect("valid");
        assert_eq!(config.url.as_deref(), Some("http://core014.inband/"));
        assert_eq!(config.paths["/nvidia/"].retries, Some(5));
        let options = config.fetch_options(false, None);
        assert_eq!(options.for_url("http://m/nvidia/x.run").0, 6);
        assert_eq!(options.for_url("http://m/mellanox/x.tgz").0, 4);
        let text = "timeout_secs = 90\n[paths.\"/nvidia/\"]\ntimeout_secs = 300\n";
        let config = MirrorConfig::parse(text, Path::new("mirror.toml")).expect("parse");
        let options = config.fetch_options(false, None);
        assert_eq!(options.for_url("http://m/nvidia/a/b").1.as_secs(), 300);
        assert_eq!(options.for_url("http://m/other").1.as_secs(), 90);
        let given = config.fetch_options(false, Some(5));
        assert_eq!(
            given.for_url("http://m/nvidia/a/b").1.as_secs(),
            5,
            "--timeout wins"
        );
        assert!(
            given.unverified_hosts.is_empty(),
            "verified unless the site says"
        );
        let text = "url = \"https://mirror.site:8443/repo/\"\ninsecure = true\n";
        let config = MirrorConfig::parse(text, Path::new("mirror.toml")).expect("parse");
        let options = config.fetch_options(false, None);
        assert_eq!(
            options.unverified_hosts,
            vec!["mirror.site:8443".to_owned()]
        );
    }

    #[test]
    fn unknown_key_names_line() {
        let text = "url = \"http://x/\"\n\nurll = \"http://y/\"\n";
        let err = MirrorConfig::parse(text, Path::new("mirror.toml")).expect_err("unknown key");
        let shown = err.to_string();
        assert!(shown.starts_with("mirror.toml:3:"), "{shown}");
        assert!(shown.contains("urll"), "{shown}");
    }

    #[test]
    fn rejects_non_http_url() {
        let err = MirrorConfig::parse("url = \"ftp://x/\"", Path::new("m.toml")).expect_err("ftp");
        assert!(matches!(err, MirrorConfigError::BadUrl { .. }));
    }

    #[test]
    fn missing_file_is_empty_config() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = MirrorConfig::load(&dir.path().join("mirror.toml")).expect("missing is ok");
        assert_eq!(config, MirrorConfig::default());
    }
}
