//! `mirror.lock`: the size and sha256 of every artifact a build downloaded, by URL path.
//!
//! Pins are keyed by the URL's path (`/nvidia/NVIDIA-Linux-x86_64-580.65.06.run`), not its host,
//! so the same pins hold when a build uses another copy of the mirror (`--mirror`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One pinned artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// Size in bytes.
    pub size: u64,
    /// Lower-case hex sha256.
    pub sha256: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct LockFile {
    #[serde(default)]
    artifact: Vec<Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    path: String,
    size: u64,
    sha256: String,
}

/// Why `mirror.lock` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Unreadable or invalid.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// The pins, sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lock {
    pins: BTreeMap<String, Pin>,
}

/// The path part of a URL (what pins are keyed by).
pub fn url_path(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let path = rest.find('/').map(|i| &rest[i..]).unwrap_or("/");
    path.split(['?', '#']).next().unwrap_or(path).to_owned()
}

impl Lock {
    /// Reads `mirror.lock`; a missing file is an empty lock.
    pub fn load(path: &Path) -> Result<Self, LockError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => {
                return Err(LockError::Invalid {
                    path: path.to_owned(),
                    message: e.to_string(),
                })
            }
        };
        Self::parse(&text, path)
    }

    /// Reads the text of a `mirror.lock` (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Self, LockError> {
        let file: LockFile = toml::from_str(text).map_err(|e| LockError::Invalid {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let mut lock = Lock::default();
        for entry in file.artifact {
            let valid =
                entry.sha256.len() == 64 && entry.sha256.chars().all(|c| c.is_ascii_hexdigit());
            if !valid {
                return Err(LockError::Invalid {
                    path: path.to_owned(),
                    message: format!("{}: sha256 must be 64 hex digits", entry.path),
                });
            }
            lock.pins.insert(
                entry.path,
                Pin {
                    size: entry.size,
                    sha256: entry.sha256.to_ascii_lowercase(),
                },
            );
        }
        Ok(lock)
    }

    /// The pin of a URL, if any.
    pub fn get(&self, url: &str) -> Option<&Pin> {
        self.pins.get(&url_path(url))
    }

    /// Pins a URL.
    pub fn insert(&mut self, url: &str, pin: Pin) {
        self.pins.insert(url_path(url), pin);
    }

    /// The pin of a URL path (`/nvidia/x.run`), if any.
    pub fn get_path(&self, path: &str) -> Option<&Pin> {
        self.pins.get(path)
    }

    /// The URL paths whose pins differ between two locks (added, removed or changed), sorted.
    pub fn changed_paths(&self, other: &Lock) -> Vec<String> {
        let mut paths: Vec<String> = self
            .pins
            .iter()
            .filter(|(path, pin)| other.pins.get(*path) != Some(pin))
            .map(|(path, _)| path.clone())
            .collect();
        paths.extend(
            other
                .pins
                .keys()
                .filter(|path| !self.pins.contains_key(*path))
                .cloned(),
        );
        paths.sort();
        paths
    }

    /// Number of pins.
    pub fn len(&self) -> usize {
        self.pins.len()
    }

    /// No pins.
    pub fn is_empty(&self) -> bool {
        self.pins.is_empty()
    }

    /// The file's text: sorted, one `[[artifact]]` per pin.
    pub fn to_text(&self) -> String {
        let mut out = String::from(
            "# Written by imgbuild: the size and sha256 of every artifact builds download.\n",
        );
        for (path, pin) in &self.pins {
            out.push_str(&format!(
                "\n[[artifact]]\npath = {path:?}\nsize = {}\nsha256 = \"{}\"\n",
                pin.size, pin.sha256
            ));
        }
        out
    }

    /// Writes the lock through a temporary file and a rename.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut tmp, self.to_text().as_bytes())?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_paths() {
        assert_eq!(
            url_path("http://core014.inband/nvidia/a.run?x=1"),
            "/nvidia/a.run"
        );
        assert_eq!(
            url_path("http://127.0.0.1:8080/nvidia/a.run"),
            "/nvidia/a.run"
        );
    }

    #[test]
    fn changed_paths_lists_added_removed_and_changed() {
        let pin = |c: char| Pin {
            size: 1,
            sha256: c.to_string().repeat(64),
        };
        let mut old = Lock::default();
        old.insert("http://m/same", pin('a'));
        old.insert("http://m/changed", pin('a'));
        old.insert("http://m/removed", pin('a'));
        let mut new = Lock::default();
        new.insert("http://other/same", pin('a'));
        new.insert("http://m/changed", pin('b'));
        new.insert("http://m/added", pin('a'));
        assert_eq!(old.changed_paths(&new), ["/added", "/changed", "/removed"]);
        assert!(new.changed_paths(&new).is_empty());
    }

    #[test]
    fn round_trip_sorted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mirror.lock");
        let mut lock = Lock::default();
        lock.insert(
            "http://m/z.tgz",
            Pin {
                size: 2,
                sha256: "b".repeat(64),
            },
        );
        lock.insert(
            "http://m/a.tgz",
            Pin {
                size: 1,
                sha256: "a".repeat(64),
            },
        );
        lock.save(&path).expect("save");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.find("/a.tgz").expect("a") < text.find("/z.tgz").expect("z"));
        assert_eq!(Lock::load(&path).expect("load"), lock);
        assert_eq!(lock.get("http://other-host/a.tgz").map(|p| p.size), Some(1));
    }

    #[test]
    fn bad_sha_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mirror.lock");
        std::fs::write(
            &path,
            "[[artifact]]\npath = \"/a\"\nsize = 1\nsha256 = \"xyz\"\n",
        )
        .expect("write");
        assert!(Lock::load(&path).is_err());
    }
}
