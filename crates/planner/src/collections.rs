//! Roles of Ansible collections: a role named by its fully qualified name
//! (`namespace.collection.role`) is found where `ansible-galaxy collection install -p
//! collections` puts a project's collections, beside the project's roles; a role inside a
//! collection is known by its collection (`ansible_collection_name`) and its full name
//! (`ansible_role_name`), as ansible-playbook knows it.

use std::path::{Component, Path, PathBuf};

use crate::yaml::Node;

/// Folders, relative to the project root, holding `ansible_collections/<namespace>/<name>/`:
/// the project's own and the one beside the image recipes (Ansible's collections folder
/// beside the playbook).
pub const COLLECTION_PATHS: &[&str] = &[
    "collections/ansible_collections",
    "images/collections/ansible_collections",
];

/// A role's fully qualified name split in its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QualifiedRole<'a> {
    /// The collection's namespace (`prometheus`).
    pub namespace: &'a str,
    /// The collection's name (`prometheus`).
    pub collection: &'a str,
    /// The role's name in the collection (`node_exporter`).
    pub role: &'a str,
}

impl<'a> QualifiedRole<'a> {
    /// `namespace.collection.role`, each part a Python identifier as Ansible requires of a
    /// collection's name (a role may start with `_`); anything else is a plain role name.
    pub fn parse(name: &'a str) -> Option<Self> {
        let mut parts = name.split('.');
        let (namespace, collection, role) = (parts.next()?, parts.next()?, parts.next()?);
        let identifier = |part: &str| {
            !part.is_empty()
                && !part.starts_with(|c: char| c.is_ascii_digit())
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        (parts.next().is_none() && [namespace, collection, role].into_iter().all(identifier))
            .then_some(Self {
                namespace,
                collection,
                role,
            })
    }

    /// Where the role may be, relative to the project root, in search order.
    pub fn candidates(&self) -> Vec<PathBuf> {
        COLLECTION_PATHS
            .iter()
            .map(|base| {
                Path::new(base)
                    .join(self.namespace)
                    .join(self.collection)
                    .join("roles")
                    .join(self.role)
            })
            .collect()
    }
}

/// The collection (`namespace.name`) whose role `role_dir` is: a folder
/// `ansible_collections/<namespace>/<name>/roles/<role>`.
pub fn collection_of(role_dir: &Path) -> Option<String> {
    let parts: Vec<&str> = role_dir
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => part.to_str(),
            _ => None,
        })
        .collect();
    match parts.as_slice() {
        [.., "ansible_collections", namespace, name, "roles", _role] => {
            Some(format!("{namespace}.{name}"))
        }
        _ => None,
    }
}

/// The full name Ansible gives a role: `namespace.collection.role` for a role of a
/// collection, else the name it was asked by.
pub fn role_fqcn(name: &str, role_dir: &Path) -> String {
    match (collection_of(role_dir), QualifiedRole::parse(name)) {
        (Some(_), Some(_)) | (None, _) => name.to_owned(),
        (Some(collection), None) => format!("{collection}.{}", short_name(name)),
    }
}

/// The name of a role without its collection (`role_name`): the last part of a fully
/// qualified name, else the name as asked.
pub fn short_name(name: &str) -> &str {
    QualifiedRole::parse(name).map_or(name, |q| q.role)
}

/// The namespace and name a collection's source says it has: `galaxy.yml` in a collection's
/// own repository, or `MANIFEST.json`'s `collection_info` in an installed one.
pub fn collection_identity(root: &Path) -> Option<(String, String)> {
    let from = |node: &Node| -> Option<(String, String)> {
        let namespace = node.get("namespace")?.as_str()?.to_owned();
        let name = node.get("name")?.as_str()?.to_owned();
        Some((namespace, name))
    };
    if let Ok(text) = std::fs::read_to_string(root.join("galaxy.yml")) {
        return crate::yaml::parse(&text).ok().as_ref().and_then(from);
    }
    let text = std::fs::read_to_string(root.join("MANIFEST.json")).ok()?;
    let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
    let info = manifest.get("collection_info")?;
    Some((
        info.get("namespace")?.as_str()?.to_owned(),
        info.get("name")?.as_str()?.to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qualified_name_has_three_identifier_parts() {
        let q = QualifiedRole::parse("prometheus.prometheus._common");
        assert_eq!(
            q,
            Some(QualifiedRole {
                namespace: "prometheus",
                collection: "prometheus",
                role: "_common"
            })
        );
        assert_eq!(QualifiedRole::parse("common/bootstrap"), None);
        assert_eq!(QualifiedRole::parse("geerlingguy.java"), None);
        assert_eq!(QualifiedRole::parse("a.b.c.d"), None);
        assert_eq!(QualifiedRole::parse("a.b-c.d"), None);
        assert_eq!(QualifiedRole::parse("a..d"), None);
    }

    #[test]
    fn a_role_of_a_collection_is_known_by_it() {
        let dir = Path::new("collections/ansible_collections/prometheus/prometheus/roles/_common");
        assert_eq!(collection_of(dir).as_deref(), Some("prometheus.prometheus"));
        assert_eq!(role_fqcn("_common", dir), "prometheus.prometheus._common");
        assert_eq!(
            role_fqcn("prometheus.prometheus._common", dir),
            "prometheus.prometheus._common"
        );
        assert_eq!(collection_of(Path::new("roles/mofed")), None);
        assert_eq!(role_fqcn("mofed", Path::new("roles/mofed")), "mofed");
        assert_eq!(short_name("prometheus.prometheus._common"), "_common");
    }

    #[test]
    fn the_identity_comes_from_galaxy_yml_or_the_manifest() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(collection_identity(dir.path()), None);
        std::fs::write(
            dir.path().join("MANIFEST.json"),
            r#"{"collection_info": {"namespace": "site", "name": "hpc"}}"#,
        )
        .expect("write");
        assert_eq!(
            collection_identity(dir.path()),
            Some(("site".into(), "hpc".into()))
        );
        std::fs::write(
            dir.path().join("galaxy.yml"),
            "---\nnamespace: prometheus\nname: prometheus\nversion: 0.30.2\n",
        )
        .expect("write");
        assert_eq!(
            collection_identity(dir.path()),
            Some(("prometheus".into(), "prometheus".into()))
        );
    }
}
