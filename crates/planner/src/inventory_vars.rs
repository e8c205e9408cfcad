//! The variables of the playbook's own `group_vars/` and `host_vars/` folders (beside the
//! recipe), as ansible-playbook reads them for a play's host: `group_vars/all`, then
//! `host_vars/<host>`, where the build's one host is the image. Each is a file (`all`,
//! `all.yml`, `all.yaml`, `all.json`) or a folder of such files, read in name order.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde_json::Value as Json;

use crate::error::Result;
use crate::recipe::var_map;
use crate::source::Sources;

const EXTENSIONS: &[&str] = &["", ".yml", ".yaml", ".json"];

/// The files that hold `name`'s variables in `folder` (relative to the project root `root`).
fn files_of(root: &Path, folder: &Path, name: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = EXTENSIONS
        .iter()
        .map(|ext| folder.join(format!("{name}{ext}")))
        .filter(|rel| root.join(rel).is_file())
        .collect();
    let dir = folder.join(name);
    if root.join(&dir).is_dir() {
        let mut names: Vec<String> = std::fs::read_dir(root.join(&dir))
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.path().is_file())
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| {
                        !n.starts_with('.')
                            && (!n.contains('.') || EXTENSIONS[1..].iter().any(|x| n.ends_with(x)))
                    })
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        files.extend(names.into_iter().map(|n| dir.join(n)));
    }
    files
}

/// `group_vars/all` and `host_vars/<host>` beside the recipe at `recipe_dir`, the host's over
/// the group's.
pub fn inventory_vars(
    sources: &mut Sources,
    root: &Path,
    recipe_dir: &Path,
    host: &str,
) -> Result<IndexMap<String, Json>> {
    let mut vars = IndexMap::new();
    let folders = [("group_vars", "all"), ("host_vars", host)];
    for (folder, name) in folders {
        for file in files_of(root, &recipe_dir.join(folder), name) {
            let node = sources.yaml(&file)?;
            vars.extend(var_map(&node, folder, &file)?);
        }
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_then_host_files_and_folders_in_name_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let write = |rel: &str, text: &str| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        };
        write("images/group_vars/all.yml", "a: group\nb: group\n");
        write("images/host_vars/node/10.yml", "b: host-10\nc: host-10\n");
        write("images/host_vars/node/20.yaml", "c: host-20\n");
        write("images/host_vars/node/notes.txt", "not: read\n");
        write("images/host_vars/other.yml", "d: other\n");
        let mut sources = Sources::new(root);
        let vars = inventory_vars(&mut sources, root, Path::new("images"), "node").expect("vars");
        assert_eq!(vars["a"], Json::from("group"));
        assert_eq!(vars["b"], Json::from("host-10"));
        assert_eq!(vars["c"], Json::from("host-20"));
        assert!(!vars.contains_key("d") && !vars.contains_key("not"));
    }
}
