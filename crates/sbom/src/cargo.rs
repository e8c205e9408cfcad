//! The SBOM of a Rust binary as a release ships it: every crate the binary is built from (its
//! normal dependencies, for the platform `cargo metadata --filter-platform` resolved), each with
//! its purl (`pkg:cargo/NAME@VERSION`), the checksum `Cargo.lock` records for a crates.io crate
//! and its licence expression. Build scripts' and tests' own dependencies are not in the binary,
//! so not in the document. The same metadata and lock give the same document.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::model::{Bom, Component, Hash, Kind, License};
use crate::purl::encode;
use crate::SbomError;

/// What `cargo metadata --format-version 1` says, as far as the document needs it.
#[derive(Deserialize)]
struct CargoMetadata {
    packages: Vec<Package>,
    resolve: Resolve,
    workspace_members: Vec<String>,
}

#[derive(Deserialize)]
struct Package {
    id: String,
    name: String,
    version: String,
    license: Option<String>,
    /// None for a crate of the workspace.
    source: Option<String>,
}

/// `Cargo.lock`, as far as the document needs it.
#[derive(Deserialize)]
struct Lock {
    #[serde(default)]
    package: Vec<LockedPackage>,
}

#[derive(Deserialize)]
struct LockedPackage {
    name: String,
    version: String,
    /// crates.io's sha256 of the crate; none for the workspace's own.
    checksum: Option<String>,
}

#[derive(Deserialize)]
struct Resolve {
    nodes: Vec<Node>,
}

#[derive(Deserialize)]
struct Node {
    id: String,
    deps: Vec<NodeDep>,
}

#[derive(Deserialize)]
struct NodeDep {
    pkg: String,
    dep_kinds: Vec<DepKind>,
}

#[derive(Deserialize)]
struct DepKind {
    /// None for a normal dependency; `build` or `dev` otherwise.
    kind: Option<String>,
}

/// The SBOM of the workspace package `binary`, from `cargo metadata`'s JSON and the text of
/// `Cargo.lock`.
pub fn of_binary(metadata: &[u8], lock: &str, binary: &str) -> Result<Bom, SbomError> {
    let metadata: CargoMetadata = serde_json::from_slice(metadata)?;
    let packages: BTreeMap<&str, &Package> = metadata
        .packages
        .iter()
        .map(|p| (p.id.as_str(), p))
        .collect();
    let root = metadata
        .workspace_members
        .iter()
        .filter_map(|id| packages.get(id.as_str()))
        .find(|p| p.name == binary)
        .ok_or_else(|| SbomError::NoSuchPackage(binary.to_owned()))?;
    let checksums = lock_checksums(lock)?;
    let mut components: Vec<Component> = linked_crates(&metadata.resolve, &root.id)
        .into_iter()
        .filter(|id| *id != root.id)
        .filter_map(|id| packages.get(id))
        .map(|p| crate_component(p, &checksums))
        .collect();
    components.sort_by(|a, b| a.bom_ref.cmp(&b.bom_ref));
    let mut subject = crate_component(root, &checksums);
    subject.kind = Kind::Application;
    Ok(Bom::by_imgbuild(subject, Vec::new(), components))
}

/// The ids of `root` and of every crate it reaches through normal dependencies.
fn linked_crates<'a>(resolve: &'a Resolve, root: &'a str) -> BTreeSet<&'a str> {
    let nodes: BTreeMap<&str, &Node> = resolve.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
    let mut seen = BTreeSet::from([root]);
    let mut todo = vec![root];
    while let Some(id) = todo.pop() {
        let Some(node) = nodes.get(id) else { continue };
        for dep in &node.deps {
            let normal = dep.dep_kinds.iter().any(|k| k.kind.is_none());
            if normal && seen.insert(dep.pkg.as_str()) {
                todo.push(dep.pkg.as_str());
            }
        }
    }
    seen
}

/// `(name, version)` to the checksum `Cargo.lock` holds for it (crates.io's sha256).
fn lock_checksums(lock: &str) -> Result<BTreeMap<(String, String), String>, SbomError> {
    let lock: Lock = toml::from_str(lock).map_err(|e| SbomError::Lock(e.to_string()))?;
    Ok(lock
        .package
        .into_iter()
        .filter_map(|p| Some(((p.name, p.version), p.checksum?)))
        .collect())
}

/// A crate as a component: its purl as its reference, its checksum, its licence.
fn crate_component(p: &Package, checksums: &BTreeMap<(String, String), String>) -> Component {
    let purl = format!("pkg:cargo/{}@{}", encode(&p.name), encode(&p.version));
    let mut c = Component::new(Kind::Library, &p.name);
    c.version = Some(p.version.clone());
    c.bom_ref = Some(purl.clone());
    c.purl = Some(purl);
    if p.source.is_some() {
        if let Some(sum) = checksums.get(&(p.name.clone(), p.version.clone())) {
            c.hashes = vec![Hash::sha256(sum)];
        }
    }
    if let Some(license) = &p.license {
        c.licenses = vec![License {
            expression: license.clone(),
        }];
    }
    c.with(
        "imgbuild:cargo:source",
        Some(p.source.as_deref().unwrap_or("workspace")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = "version = 3\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\n\n\
        [[package]]\nname = \"zlib\"\nversion = \"1.2.0\"\nsource = \"registry+x\"\n\
        checksum = \"aa11\"\n\n[[package]]\nname = \"cc\"\nversion = \"1.0.0\"\n\
        source = \"registry+x\"\nchecksum = \"bb22\"\n";

    fn metadata() -> Vec<u8> {
        let package = |id: &str, name: &str, version: &str, source: Option<&str>| {
            serde_json::json!({"id": id, "name": name, "version": version,
                "license": "MIT OR Apache-2.0", "source": source})
        };
        let normal = serde_json::json!([{"kind": null}]);
        serde_json::to_vec(&serde_json::json!({
            "packages": [
                package("app-id", "app", "0.1.0", None),
                package("zlib-id", "zlib", "1.2.0", Some("registry+x")),
                package("cc-id", "cc", "1.0.0", Some("registry+x")),
                package("tempfile-id", "tempfile", "3.0.0", Some("registry+x")),
            ],
            "workspace_members": ["app-id"],
            "resolve": {"nodes": [
                {"id": "app-id", "deps": [
                    {"pkg": "zlib-id", "dep_kinds": normal},
                    {"pkg": "tempfile-id", "dep_kinds": [{"kind": "dev"}]},
                ]},
                {"id": "zlib-id", "deps": [{"pkg": "cc-id", "dep_kinds": [{"kind": "build"}]}]},
            ]},
        }))
        .expect("json")
    }

    #[test]
    fn the_binarys_crates_with_checksums_and_licences_and_no_build_or_test_crate() {
        let bom = of_binary(&metadata(), LOCK, "app").expect("sbom");
        assert_eq!(bom.metadata.component.name, "app");
        assert_eq!(bom.metadata.component.kind, Kind::Application);
        let names: Vec<&str> = bom.components.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["zlib"],
            "a build script's and a test's crates are not linked"
        );
        let zlib = &bom.components[0];
        assert_eq!(zlib.purl.as_deref(), Some("pkg:cargo/zlib@1.2.0"));
        assert_eq!(zlib.sha256(), Some("aa11"));
        assert_eq!(zlib.licenses[0].expression, "MIT OR Apache-2.0");
    }

    #[test]
    fn a_lock_that_is_not_toml_is_refused() {
        let err = of_binary(&metadata(), "[[package]\n", "app").expect_err("refused");
        assert!(err.to_string().starts_with("Cargo.lock:"), "{err}");
    }

    #[test]
    fn an_unknown_binary_is_named() {
        let err = of_binary(&metadata(), LOCK, "other").expect_err("refused");
        assert!(err.to_string().contains("\"other\""), "{err}");
    }
}
