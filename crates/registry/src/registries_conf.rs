//! `containers-registries.conf(5)`, as podman, skopeo, buildah and Warewulf's own import read
//! it: `[[registry]]` entries (a `prefix`, the `location` it really is at, `insecure`,
//! `blocked`, `mirror-by-digest-only`) with `[[registry.mirror]]` mirrors tried first, and
//! `unqualified-search-registries` for short names. Read from `$CONTAINERS_REGISTRIES_CONF`,
//! else `/etc/containers/registries.conf`, then every `registries.conf.d/*.conf` beside it in
//! name order (a later file's entry for a prefix replaces an earlier one's, and a later
//! `unqualified-search-registries` replaces the list). An air-gapped site gives `docker.io` a
//! mirror there, and recipes keep `build_from: docker.io/rockylinux/rockylinux:9.5` unchanged.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::auth::Credentials;
use crate::error::RegistryError;
use crate::reference::Reference;
use crate::transfer::PulledImage;

/// The parsed configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistriesConf {
    /// Where short names are looked up, in order.
    pub unqualified_search: Vec<String>,
    /// The `[[registry]]` entries.
    pub registries: Vec<RegistryEntry>,
    /// The files read, for messages.
    pub files: Vec<PathBuf>,
}

/// One `[[registry]]` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RegistryEntry {
    /// The names it applies to (`docker.io`, `docker.io/library`); defaults to `location`.
    #[serde(default)]
    pub prefix: String,
    /// Where those names really are.
    #[serde(default)]
    pub location: String,
    /// Plain HTTP (or unverified TLS).
    #[serde(default)]
    pub insecure: bool,
    /// Never pull from it.
    #[serde(default)]
    pub blocked: bool,
    /// Use the mirrors only for references pinned by digest.
    #[serde(default)]
    pub mirror_by_digest_only: bool,
    /// Mirrors, tried in order before `location`.
    #[serde(default)]
    pub mirror: Vec<Mirror>,
}

/// A `[[registry.mirror]]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Mirror {
    /// Where the mirror is (`mirror.site:5000/docker.io`).
    pub location: String,
    /// Plain HTTP.
    #[serde(default)]
    pub insecure: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct File {
    #[serde(default)]
    unqualified_search_registries: Option<Vec<String>>,
    #[serde(default)]
    registry: Vec<RegistryEntry>,
}

/// Where a reference is pulled from, in the order to try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullSource {
    /// The reference rewritten to the mirror or location.
    pub reference: Reference,
    /// Whether this is a mirror (rather than the registry itself).
    pub mirror: bool,
}

fn bad(path: &Path, why: impl std::fmt::Display) -> RegistryError {
    RegistryError::Invalid {
        what: path.display().to_string(),
        detail: why.to_string(),
    }
}

impl RegistriesConf {
    /// The configuration of this machine (empty when no file exists).
    pub fn load() -> Result<Self, RegistryError> {
        let main = std::env::var_os("CONTAINERS_REGISTRIES_CONF")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/etc/containers/registries.conf"));
        let mut files = vec![main.clone()];
        let drop_ins = main.with_extension("conf.d");
        if let Ok(entries) = std::fs::read_dir(&drop_ins) {
            let mut more: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "conf"))
                .collect();
            more.sort();
            files.extend(more);
        }
        let mut conf = RegistriesConf::default();
        for path in files {
            match std::fs::read_to_string(&path) {
                Ok(text) => conf.add(&text, &path)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(bad(&path, e)),
            }
        }
        Ok(conf)
    }

    /// Whether an entry or a mirror at `registry` (`host[:port]`) is marked `insecure`: it
    /// is then reached over HTTPS taking any certificate, or plain HTTP, for pushes as for
    /// pulls.
    pub fn marks_insecure(&self, registry: &str) -> bool {
        let at = |location: &str| location.split('/').next() == Some(registry);
        self.registries.iter().any(|entry| {
            let location = if entry.location.is_empty() {
                &entry.prefix
            } else {
                &entry.location
            };
            (entry.insecure && at(location))
                || entry.mirror.iter().any(|m| m.insecure && at(&m.location))
        })
    }

    /// Adds one file's settings over those read before.
    pub fn add(&mut self, text: &str, path: &Path) -> Result<(), RegistryError> {
        let file: File = toml::from_str(text).map_err(|e| bad(path, e.message()))?;
        if let Some(list) = file.unqualified_search_registries {
            self.unqualified_search = list;
        }
        for mut entry in file.registry {
            if entry.prefix.is_empty() {
                entry.prefix = entry.location.clone();
            }
            if entry.location.is_empty() {
                entry.location = entry.prefix.clone();
            }
            if entry.prefix.is_empty() {
                return Err(bad(path, "a [[registry]] has neither prefix nor location"));
            }
            self.registries.retain(|r| r.prefix != entry.prefix);
            self.registries.push(entry);
        }
        self.files.push(path.to_owned());
        Ok(())
    }

    /// The entry whose prefix matches `name` (`host/repository`) most closely.
    fn entry_for(&self, name: &str) -> Option<&RegistryEntry> {
        self.registries
            .iter()
            .filter(|r| {
                let prefix = r.prefix.trim_end_matches('/');
                name == prefix || name.starts_with(&format!("{prefix}/"))
            })
            .max_by_key(|r| r.prefix.len())
    }

    /// Where to pull `text` (a reference as written) from: for a short name, each
    /// unqualified-search registry (docker.io when there is none); for each candidate, its
    /// mirrors and then its location. A blocked registry is left out; nothing left is an error.
    pub fn sources(&self, text: &str) -> Result<Vec<PullSource>, RegistryError> {
        let parsed = Reference::parse(text)?;
        let candidates: Vec<Reference> =
            if is_short_name(text) && !self.unqualified_search.is_empty() {
                let short = text.strip_prefix("docker://").unwrap_or(text);
                self.unqualified_search
                    .iter()
                    .map(|registry| Reference::parse(&format!("{registry}/{short}")))
                    .collect::<Result<_, _>>()?
            } else {
                vec![parsed]
            };
        let mut sources = Vec::new();
        for candidate in candidates {
            let name = format!("{}/{}", candidate.registry, candidate.repository);
            let Some(entry) = self.entry_for(&name) else {
                sources.push(PullSource {
                    reference: candidate,
                    mirror: false,
                });
                continue;
            };
            if entry.blocked {
                continue;
            }
            let rest = &name[entry.prefix.trim_end_matches('/').len()..];
            let mirrors_apply = !entry.mirror_by_digest_only || candidate.digest.is_some();
            let mirrors = entry.mirror.iter().filter(|_| mirrors_apply);
            for (location, insecure, mirror) in mirrors
                .map(|m| (m.location.as_str(), m.insecure, true))
                .chain(std::iter::once((
                    entry.location.as_str(),
                    entry.insecure,
                    false,
                )))
            {
                let mut reference = rewrite(&candidate, location.trim_end_matches('/'), rest)?;
                reference.insecure |= insecure;
                sources.push(PullSource { reference, mirror });
            }
        }
        if sources.is_empty() {
            return Err(RegistryError::Invalid {
                what: text.to_owned(),
                detail: format!(
                    "every registry it could come from is blocked in {}",
                    self.files_text()
                ),
            });
        }
        Ok(sources)
    }

    /// The files read, for messages.
    pub fn files_text(&self) -> String {
        if self.files.is_empty() {
            return "/etc/containers/registries.conf (not present)".into();
        }
        self.files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Pulls `text` (a reference as written) from the first of its sources (see
/// `RegistriesConf::sources`) that gives it; returns the image and the reference it came from.
/// When none does, the error lists each source and what it answered, and, when none could be
/// reached at all, says the machine may be offline and how to give the registry a mirror.
pub fn pull_via(
    conf: &RegistriesConf,
    text: &str,
    blob_dir: &Path,
) -> Result<(PulledImage, Reference), RegistryError> {
    let sources = conf.sources(text)?;
    let mut tried = Vec::new();
    let mut unreachable = true;
    for source in &sources {
        let credentials =
            Credentials::for_reference(&source.reference.registry, &source.reference.repository)?;
        match crate::transfer::pull(&source.reference, credentials, blob_dir) {
            Ok(pulled) => return Ok((pulled, source.reference.clone())),
            Err(e) => {
                unreachable &= matches!(e, RegistryError::Transport { .. });
                tried.push((source.reference.clone(), e));
            }
        }
    }
    if tried.len() == 1 && !unreachable {
        return Err(tried.remove(0).1);
    }
    let hosts: Vec<String> = tried.iter().map(|(r, _)| r.registry.clone()).collect();
    let hint = if unreachable {
        format!(
            "no registry could be reached ({}): this machine may be offline. Give the registry a mirror in {} ([[registry]] prefix = \"{}\" with [[registry.mirror]] location = \"your-registry:5000/...\"), or point build_from at your site's registry (docs/air-gapped.md)",
            hosts.join(", "),
            conf.files_text(),
            tried.first().map_or("docker.io", |(r, _)| r.registry.as_str())
        )
    } else {
        "no source gave it".to_owned()
    };
    Err(RegistryError::Unavailable {
        reference: text.to_owned(),
        tried: tried.iter().map(|(r, e)| format!("{r}: {e}")).collect(),
        hint,
    })
}

/// `reference` with its `host/repository` replaced by `location` + `rest`.
fn rewrite(reference: &Reference, location: &str, rest: &str) -> Result<Reference, RegistryError> {
    let pin = match (&reference.digest, &reference.tag) {
        (Some(digest), _) => format!("@{digest}"),
        (None, Some(tag)) => format!(":{tag}"),
        (None, None) => String::new(),
    };
    // A location with no host part (`docker.io` for itself) keeps Docker's own rules.
    Reference::parse(&format!("{location}{rest}{pin}"))
}

/// Whether a reference names no registry (`rockylinux/rockylinux:9.5`, `ubuntu`).
pub fn is_short_name(text: &str) -> bool {
    let rest = text.strip_prefix("docker://").unwrap_or(text);
    match rest.split_once('/') {
        Some((first, _)) => !(first.contains(['.', ':']) || first == "localhost"),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(text: &str) -> RegistriesConf {
        let mut conf = RegistriesConf::default();
        conf.add(text, Path::new("registries.conf")).expect("parse");
        conf
    }

    #[test]
    fn a_mirror_is_tried_before_the_registry_itself() {
        let conf = conf(
            r#"
[[registry]]
prefix = "docker.io"
location = "docker.io"
[[registry.mirror]]
location = "mirror.site:5000/hub"
insecure = true
"#,
        );
        let sources = conf
            .sources("docker.io/rockylinux/rockylinux:9.5")
            .expect("sources");
        let names: Vec<String> = sources.iter().map(|s| s.reference.to_string()).collect();
        assert_eq!(
            names,
            vec![
                "mirror.site:5000/hub/rockylinux/rockylinux:9.5",
                "docker.io/rockylinux/rockylinux:9.5"
            ]
        );
        assert!(sources[0].mirror && sources[0].reference.insecure);
        assert!(conf.marks_insecure("mirror.site:5000"));
        assert!(!conf.marks_insecure("docker.io") && !conf.marks_insecure("mirror.site"));
        assert_eq!(
            sources[0].reference.schemes(),
            &[crate::Scheme::HttpsUnverified, crate::Scheme::Http]
        );
        assert!(!sources[1].mirror);
    }

    #[test]
    fn short_names_blocked_registries_and_digest_only_mirrors() {
        let conf = conf(
            r#"
unqualified-search-registries = ["registry.site", "docker.io"]
[[registry]]
prefix = "docker.io"
blocked = true
[[registry]]
prefix = "registry.site/private"
location = "10.0.0.5:5000/private"
mirror-by-digest-only = true
[[registry.mirror]]
location = "cache.site/private"
"#,
        );
        let short: Vec<String> = conf
            .sources("ubuntu:22.04")
            .expect("sources")
            .iter()
            .map(|s| s.reference.to_string())
            .collect();
        assert_eq!(
            short,
            vec!["registry.site/ubuntu:22.04"],
            "docker.io is blocked"
        );
        let tagged = conf
            .sources("registry.site/private/app:1")
            .expect("sources");
        assert_eq!(tagged.len(), 1, "a tag skips digest-only mirrors");
        assert_eq!(tagged[0].reference.registry, "10.0.0.5:5000");
        let blocked = conf
            .sources("docker.io/library/ubuntu:22.04")
            .expect_err("blocked");
        assert!(blocked.to_string().contains("blocked"), "{blocked}");
    }
}
