//! Ansible's own code on the machine running the build, found as `ansible-playbook` finds it:
//! ansible-core's package (its `modules/`, `module_utils/` and action plugins) and the
//! installed collections (`COLLECTIONS_PATHS`, which `ANSIBLE_COLLECTIONS_PATH` and
//! `ansible.cfg` set, then the `ansible_collections` packages on Python's path, where Debian's
//! `ansible` and `pip install ansible` put theirs). A task whose module imgbuild does not
//! implement runs that module's code in the image (see `role_module`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;

use super::api::ModuleError;

/// ansible-core and the collections of the machine running the build.
#[derive(Debug, Clone, Deserialize)]
pub struct HostAnsible {
    /// ansible-core's version (`2.14.18`).
    pub version: String,
    /// The `ansible` package folder (holding `modules/`, `module_utils/`, `plugins/`).
    pub package: PathBuf,
    /// Folders holding `ansible_collections/`, in search order.
    pub collections: Vec<PathBuf>,
}

/// Asks the Python that runs `ansible` where its package and collections are.
const PROBE: &str = r#"
import json, os
import ansible, ansible.release
from ansible import constants as C
paths = [os.path.expanduser(p) for p in C.COLLECTIONS_PATHS]
try:
    import ansible_collections
    paths += [os.path.dirname(p) for p in ansible_collections.__path__]
except ImportError:
    pass
print(json.dumps({"version": ansible.release.__version__,
                  "package": os.path.dirname(ansible.__file__), "collections": paths}))
"#;

/// The machine's ansible-core, asked once per run (it does not change while a build runs).
pub fn host() -> Result<&'static HostAnsible, ModuleError> {
    static FOUND: OnceLock<Result<HostAnsible, ModuleError>> = OnceLock::new();
    FOUND.get_or_init(probe).as_ref().map_err(Clone::clone)
}

fn probe() -> Result<HostAnsible, ModuleError> {
    // A site may point at another ansible-core's module_utils (an older setting, still read).
    let utils_override = std::env::var_os("IMGBUILD_ANSIBLE_MODULE_UTILS").map(PathBuf::from);
    for python in ansible::python::interpreters() {
        let asked = std::process::Command::new(&python)
            .args(["-c", PROBE])
            .envs(ansible::python::local_temp())
            .output();
        let Some(out) = asked.ok().filter(|o| o.status.success()) else {
            continue;
        };
        if let Ok(mut found) = serde_json::from_slice::<HostAnsible>(&out.stdout) {
            if let Some(package) = utils_override.as_deref().and_then(Path::parent) {
                found.package = package.to_owned();
            }
            return Ok(found);
        }
    }
    // No Python imports ansible, but the site named its module_utils: its role modules run
    // with them as before (no ansible-core modules or collections to find).
    if let Some(package) = utils_override.as_deref().and_then(Path::parent) {
        return Ok(HostAnsible {
            version: "unknown".into(),
            package: package.to_owned(),
            collections: Vec::new(),
        });
    }
    Err(ModuleError::new(
        "no Python here (the ansible command's, /usr/bin/python3, python3) imports ansible, the ansible-core whose own code imgbuild runs the modules it does not implement with; install it on the machine running the build (Debian: apt-get install ansible, which brings the collections too, or ansible-core; elsewhere: pip install ansible-core)",
    ))
}

/// A module file of Ansible's found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundModule {
    /// The module's file.
    pub path: PathBuf,
    /// Where it comes from, for the plan: `ansible-core 2.14.18` or `community.general 6.6.2`.
    pub origin: String,
}

impl HostAnsible {
    /// ansible-core's `module_utils` folder.
    pub fn module_utils(&self) -> PathBuf {
        self.package.join("module_utils")
    }

    /// ansible-core's own module `name` (`ansible.builtin.name`).
    pub fn builtin_module(&self, name: &str) -> Option<FoundModule> {
        let path = self.package.join("modules").join(format!("{name}.py"));
        path.is_file().then(|| FoundModule {
            path,
            origin: format!("ansible-core {}", self.version),
        })
    }

    /// Whether ansible-core runs `name` through an action plugin of its own, code that runs
    /// inside the controller process rather than in the target.
    pub fn builtin_action(&self, name: &str) -> Option<PathBuf> {
        let path = self
            .package
            .join("plugins/action")
            .join(format!("{name}.py"));
        path.is_file().then_some(path)
    }

    /// Where ansible-core routes the short module name `name` (`pacman` to
    /// `community.general.pacman`, `mount` to `ansible.posix.mount`), as its loader reads
    /// `config/ansible_builtin_runtime.yml` for the names modules had before collections.
    pub fn routed_module(&self, name: &str) -> Option<&str> {
        static ROUTES: OnceLock<Vec<(String, String)>> = OnceLock::new();
        let routes = ROUTES.get_or_init(|| {
            let table = self.package.join("config/ansible_builtin_runtime.yml");
            std::fs::read_to_string(table)
                .map(|text| module_routes(&text))
                .unwrap_or_default()
        });
        routes
            .iter()
            .find(|(short, _)| short == name)
            .map(|(_, fqcn)| fqcn.as_str())
    }

    /// The module `namespace.collection.name` of an installed collection.
    pub fn collection_module(&self, fqcn: &str) -> Option<FoundModule> {
        let (namespace, collection, name) = split_fqcn(fqcn)?;
        self.collections.iter().find_map(|base| {
            let root = base
                .join("ansible_collections")
                .join(namespace)
                .join(collection);
            let path = root.join("plugins/modules").join(format!("{name}.py"));
            path.is_file().then(|| FoundModule {
                origin: collection_origin(&root, namespace, collection),
                path,
            })
        })
    }

    /// The action plugin `namespace.collection.name` of an installed collection, if any.
    pub fn collection_action(&self, fqcn: &str) -> Option<PathBuf> {
        let (namespace, collection, name) = split_fqcn(fqcn)?;
        self.collections.iter().find_map(|base| {
            let path = base
                .join("ansible_collections")
                .join(namespace)
                .join(collection)
                .join("plugins/action")
                .join(format!("{name}.py"));
            path.is_file().then_some(path)
        })
    }
}

/// The `redirect:`s of `plugin_routing: modules:` in ansible-core's routing table, read by its
/// layout (two spaces a level): `(short name, namespace.collection.name)`.
fn module_routes(text: &str) -> Vec<(String, String)> {
    let mut routes = Vec::new();
    let mut in_modules = false;
    let mut current: Option<&str> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        match indent {
            2 => in_modules = trimmed == "modules:",
            4 if in_modules => current = trimmed.strip_suffix(':'),
            6 if in_modules => {
                let redirect = trimmed.strip_prefix("redirect:").map(str::trim);
                if let (Some(name), Some(target)) = (current, redirect) {
                    routes.push((name.to_owned(), target.to_owned()));
                }
            }
            _ => {}
        }
    }
    routes
}

/// The `sha256:<hex>` digest of a module's file (what a layer key holds of it).
pub fn file_digest(path: &Path) -> std::io::Result<String> {
    use sha2::Digest;
    let bytes = std::fs::read(path)?;
    Ok(format!("sha256:{:x}", sha2::Sha256::digest(&bytes)))
}

/// `namespace.collection.name` in its parts (`ansible.builtin` and `ansible.legacy` are not
/// collections on disk).
pub fn split_fqcn(fqcn: &str) -> Option<(&str, &str, &str)> {
    let mut parts = fqcn.splitn(3, '.');
    let (namespace, collection, name) = (parts.next()?, parts.next()?, parts.next()?);
    let identifier =
        |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ([namespace, collection, name].into_iter().all(identifier)
        && !(namespace == "ansible" && matches!(collection, "builtin" | "legacy")))
    .then_some((namespace, collection, name))
}

/// `namespace.collection version`, the version from the collection's `MANIFEST.json`.
pub fn collection_origin(root: &Path, namespace: &str, collection: &str) -> String {
    let version = std::fs::read(root.join("MANIFEST.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|manifest| {
            manifest["collection_info"]["version"]
                .as_str()
                .map(str::to_owned)
        });
    match version {
        Some(version) => format!("{namespace}.{collection} {version}"),
        None => format!("{namespace}.{collection}"),
    }
}

/// Where a collection module's collection is: `…/ansible_collections/<ns>/<coll>` above its
/// `plugins/modules/<name>.py`, with the namespace and the collection's name.
pub fn collection_of(module: &Path) -> Option<(PathBuf, String, String)> {
    let modules = module.parent()?;
    let plugins = modules.parent()?;
    let root = plugins.parent()?;
    let collection = root.file_name()?.to_str()?.to_owned();
    let namespace_dir = root.parent()?;
    let namespace = namespace_dir.file_name()?.to_str()?.to_owned();
    let is_collection = modules.ends_with("modules")
        && plugins.ends_with("plugins")
        && namespace_dir.parent()?.ends_with("ansible_collections");
    is_collection.then(|| (root.to_owned(), namespace, collection))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_routing_table_gives_each_old_short_name_its_collection() {
        let table = "plugin_routing:\n  connection:\n    chroot:\n      redirect: community.general.chroot\n  \
                     modules:\n    # a comment\n    pacman:\n      redirect: community.general.pacman\n    \
                     gone:\n      tombstone:\n        removal_date: x\n    mount:\n      redirect: ansible.posix.mount\n  \
                     module_utils:\n    x:\n      redirect: y.z.x\n";
        assert_eq!(
            module_routes(table),
            vec![
                ("pacman".to_owned(), "community.general.pacman".to_owned()),
                ("mount".to_owned(), "ansible.posix.mount".to_owned()),
            ]
        );
    }

    #[test]
    fn a_fqcn_is_split_and_ansible_builtin_is_no_collection() {
        assert_eq!(
            split_fqcn("community.general.filesize"),
            Some(("community", "general", "filesize"))
        );
        assert_eq!(split_fqcn("ansible.builtin.cron"), None);
        assert_eq!(split_fqcn("ansible.legacy.cron"), None);
        assert_eq!(split_fqcn("cron"), None);
        assert_eq!(split_fqcn("a.b.c-d"), None);
    }

    #[test]
    fn a_collection_module_names_its_collection() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("ansible_collections/community/general");
        std::fs::create_dir_all(root.join("plugins/modules")).expect("mkdir");
        std::fs::write(root.join("plugins/modules/filesize.py"), "").expect("module");
        std::fs::write(
            root.join("MANIFEST.json"),
            r#"{"collection_info": {"version": "6.6.2"}}"#,
        )
        .expect("manifest");
        let host = HostAnsible {
            version: "2.14.18".into(),
            package: dir.path().join("ansible"),
            collections: vec![dir.path().join("elsewhere"), dir.path().to_owned()],
        };
        let found = host
            .collection_module("community.general.filesize")
            .expect("found");
        assert_eq!(found.origin, "community.general 6.6.2");
        assert_eq!(
            collection_of(&found.path),
            Some((root.clone(), "community".into(), "general".into()))
        );
        assert!(host
            .collection_module("community.general.nothing")
            .is_none());
        assert!(host.builtin_module("cron").is_none());
        assert!(collection_of(&dir.path().join("roles/r/library/m.py")).is_none());
    }
}
