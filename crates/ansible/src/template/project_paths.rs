//! `role_path` and `playbook_dir` as Ansible gives them, absolute, while a plan holds them
//! relative to the project. Inside a render they are absolute on the machine running the
//! build, so a command a `pipe` or `lines` lookup runs in the playbook's folder, or a Python
//! plugin, finds what they name; what a render gives back names the project's files relative to
//! its root again, so a plan, and a layer's key, is the same from a checkout at any path.

use std::path::{Path, PathBuf};

use minijinja::Value;
use serde_json::Value as Json;

use super::lookup_state::root;

/// The magic variables that hold a folder of the project.
const PROJECT_FOLDERS: &[&str] = &["role_path", "playbook_dir"];

/// The project's root, when it is an absolute path (only then can a render name it).
fn absolute_root() -> Option<PathBuf> {
    Some(root()).filter(|r| r.is_absolute())
}

/// `name`'s value as Ansible has it when `name` is a project folder given relative to the
/// project (`roles/x` gives `/path/of/project/roles/x`); `None` for any other variable.
pub(super) fn absolute_folder(name: &str, raw: &Json) -> Option<Value> {
    if !PROJECT_FOLDERS.contains(&name) {
        return None;
    }
    let relative = raw
        .as_str()
        .filter(|p| !p.starts_with('/') && !p.contains("{{"))?;
    let root = absolute_root()?;
    let path = match relative {
        "" | "." => root,
        relative => root.join(relative),
    };
    Some(Value::from(path.display().to_string()))
}

/// `text` with every path under the project's root made relative to it (the root alone
/// becomes `.`).
pub(super) fn relative_text(text: String) -> String {
    match absolute_root() {
        Some(root) => relative_in(text, &root),
        None => text,
    }
}

/// Every string in `value` as [`relative_text`] gives it.
pub(super) fn relative_json(value: Json) -> Json {
    match absolute_root() {
        Some(root) => relative_json_in(value, &root),
        None => value,
    }
}

fn relative_json_in(value: Json, root: &Path) -> Json {
    match value {
        Json::String(text) => Json::String(relative_in(text, root)),
        Json::Array(items) => Json::Array(
            items
                .into_iter()
                .map(|v| relative_json_in(v, root))
                .collect(),
        ),
        Json::Object(map) => Json::Object(
            map.into_iter()
                .map(|(k, v)| (k, relative_json_in(v, root)))
                .collect(),
        ),
        other => other,
    }
}

fn relative_in(text: String, root: &Path) -> String {
    let root = root.display().to_string();
    if root == "/" || !text.contains(&root) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(&root) {
        out.push_str(&rest[..at]);
        let after = &rest[at + root.len()..];
        if let Some(below) = after.strip_prefix('/') {
            rest = below;
        } else if after.is_empty() || !after.starts_with(is_name_char) {
            out.push('.');
            rest = after;
        } else {
            // `/path/of/project2`: another folder whose name starts as the root's does.
            out.push_str(&root);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_the_root_become_relative_and_others_stay() {
        let root = Path::new("/srv/site");
        let text = "ls /srv/site/roles/r/vars/main.yml /srv/site /srv/site2/x /etc".to_owned();
        assert_eq!(
            relative_in(text, root),
            "ls roles/r/vars/main.yml . /srv/site2/x /etc"
        );
        let json = serde_json::json!({"a": ["/srv/site/images/files/x", 3], "b": "/srv/site"});
        assert_eq!(
            relative_json_in(json, root),
            serde_json::json!({"a": ["images/files/x", 3], "b": "."})
        );
    }
}
