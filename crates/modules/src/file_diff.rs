//! The `diff` Ansible's `file` module returns: the path's state before and after, and each
//! attribute, link source or time it changed.

use std::path::Path;

use serde_json::{json, Map, Value as Json};

use super::api::ModuleError;
use super::attrs::AttrChanges;
use crate::rootfs::{Kind, RootFs};

/// What a path is, in Ansible's words: `absent`, `link`, `directory`, `hard` (a file with more
/// than one name) or `file`.
pub fn prev_state(fs: &RootFs, path: &Path) -> Result<&'static str, ModuleError> {
    Ok(match fs.meta(path)? {
        None => "absent",
        Some(m) if m.kind == Kind::Symlink => "link",
        Some(m) if m.kind == Kind::Dir => "directory",
        Some(m) if m.nlink > 1 => "hard",
        Some(_) => "file",
    })
}

/// A diff being written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileDiff {
    before: Map<String, Json>,
    after: Map<String, Json>,
}

impl FileDiff {
    /// Both sides name `shown`; a change of state is noted, and a folder about to be removed
    /// lists what it holds.
    pub fn new(
        fs: &RootFs,
        path: &Path,
        shown: &str,
        state: &str,
        prev: &str,
    ) -> Result<Self, ModuleError> {
        let mut diff = FileDiff {
            before: Map::from_iter([("path".to_owned(), json!(shown))]),
            after: Map::from_iter([("path".to_owned(), json!(shown))]),
        };
        if prev != state {
            diff.note("state", prev, state);
            if state == "absent" && prev == "directory" {
                let mut content = (Vec::new(), Vec::new());
                walk(fs, path, shown, &mut content)?;
                diff.before.insert(
                    "path_content".into(),
                    json!({"directories": content.0, "files": content.1}),
                );
            }
        }
        Ok(diff)
    }

    /// `key` was `before` and is `after`.
    pub fn note(&mut self, key: &str, before: impl Into<Json>, after: impl Into<Json>) {
        self.before.insert(key.into(), before.into());
        self.after.insert(key.into(), after.into());
    }

    /// Owner, group and mode as they changed (ids as numbers, modes as `0644`).
    pub fn note_attrs(&mut self, changes: &AttrChanges) {
        if let Some((before, after)) = changes.uid {
            self.note("owner", before, after);
        }
        if let Some((before, after)) = changes.gid {
            self.note("group", before, after);
        }
        if let Some((before, after)) = changes.mode {
            self.note("mode", format!("0{before:03o}"), format!("0{after:03o}"));
        }
    }

    /// The `{before, after}` object.
    pub fn into_json(self) -> Json {
        json!({"before": self.before, "after": self.after})
    }
}

/// The folders and files below `path` (named from `shown`), parents before their content.
fn walk(
    fs: &RootFs,
    path: &Path,
    shown: &str,
    found: &mut (Vec<String>, Vec<String>),
) -> Result<(), ModuleError> {
    let mut folders = Vec::new();
    for name in fs.list(path)? {
        let child = path.join(&name);
        let child_shown = format!("{}/{name}", shown.trim_end_matches('/'));
        if fs.meta(&child)?.is_some_and(|m| m.kind == Kind::Dir) {
            found.0.push(child_shown.clone());
            folders.push((child, child_shown));
        } else {
            found.1.push(child_shown);
        }
    }
    for (child, child_shown) in folders {
        walk(fs, &child, &child_shown, found)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::{DirTarget, Target};

    #[test]
    fn states_content_and_attributes_are_noted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("d/sub")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("scratch")).expect("mkdir");
        std::fs::write(root.join("d/sub/f"), "x").expect("write");
        let target = DirTarget::new(&root, &dir.path().join("scratch")).expect("target");
        let fs = target.fs();
        assert_eq!(prev_state(fs, Path::new("/d")).ok(), Some("directory"));
        assert_eq!(prev_state(fs, Path::new("/d/sub/f")).ok(), Some("file"));
        assert_eq!(prev_state(fs, Path::new("/nothing")).ok(), Some("absent"));
        let mut diff =
            FileDiff::new(fs, Path::new("/d"), "/d", "absent", "directory").expect("diff");
        diff.note_attrs(&AttrChanges {
            mode: Some((0o644, 0o1777)),
            ..AttrChanges::default()
        });
        assert_eq!(
            diff.into_json(),
            json!({
                "before": {"path": "/d", "state": "directory", "mode": "0644",
                    "path_content": {"directories": ["/d/sub"], "files": ["/d/sub/f"]}},
                "after": {"path": "/d", "state": "absent", "mode": "01777"},
            })
        );
    }
}
