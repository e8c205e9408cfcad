//! Reading the project's files: parsed once per plan, each recorded as an input of the image.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::error::{ErrorKind, Location, PlanError, Result};
use crate::yaml::{self, Node};

/// The project's files as one plan sees them.
#[derive(Debug)]
pub struct Sources {
    root: PathBuf,
    parsed: HashMap<PathBuf, Rc<Node>>,
    inputs: BTreeSet<PathBuf>,
}

impl Sources {
    /// Files below `root`; every path given to the methods is relative to it.
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_owned(),
            parsed: HashMap::new(),
            inputs: BTreeSet::new(),
        }
    }

    /// Whether a regular file exists at `rel`.
    pub fn is_file(&self, rel: &Path) -> bool {
        self.root.join(rel).is_file()
    }

    /// Whether anything (file, folder, dangling link) exists at `rel`.
    pub fn exists(&self, rel: &Path) -> bool {
        std::fs::symlink_metadata(self.root.join(rel)).is_ok()
    }

    /// Whether a directory exists at `rel`.
    pub fn is_dir(&self, rel: &Path) -> bool {
        self.root.join(rel).is_dir()
    }

    /// The text of `rel`, recorded as an input.
    pub fn read_text(&mut self, rel: &Path) -> Result<String> {
        let text = std::fs::read_to_string(self.root.join(rel))
            .map_err(|e| PlanError::new(Location::file(rel), ErrorKind::Io(e)))?;
        self.inputs.insert(rel.to_owned());
        Ok(text)
    }

    /// Records a file or folder that the build will read (a `copy` source).
    pub fn record(&mut self, rel: &Path) {
        self.inputs.insert(rel.to_owned());
    }

    /// The YAML document in `rel`, parsed once and recorded as an input.
    pub fn yaml(&mut self, rel: &Path) -> Result<Rc<Node>> {
        if let Some(node) = self.parsed.get(rel) {
            return Ok(node.clone());
        }
        let text = self.read_text(rel)?;
        let node = yaml::parse(&text).map_err(|e| {
            PlanError::new(
                Location::new(rel, e.line),
                ErrorKind::Yaml(format!("{} (column {})", e.message, e.col)),
            )
        })?;
        let node = Rc::new(node);
        self.parsed.insert(rel.to_owned(), node.clone());
        Ok(node)
    }

    /// Where `name` is defined in the YAML read so far: a key of a vars file (defaults/, vars/,
    /// vars_files), of a `vars:` mapping, or of a `set_fact:`; sorted by file and line.
    pub fn definitions(&self, name: &str) -> Vec<Location> {
        let mut found = Vec::new();
        for (path, node) in &self.parsed {
            let vars_file = !path.components().any(|c| {
                matches!(
                    c.as_os_str().to_str(),
                    Some("tasks" | "handlers" | "meta" | "images")
                )
            });
            find_definitions(node, name, path, vars_file, &mut found);
        }
        found.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
        found
    }

    /// Every file read so far, relative to the root, sorted.
    pub fn inputs(&self) -> Vec<PathBuf> {
        self.inputs.iter().cloned().collect()
    }
}

/// Adds to `found` the keys named `name` that define a variable: at the top of a vars file
/// (`top`), or in a mapping under `vars:` or `set_fact:`.
fn find_definitions(node: &Node, name: &str, path: &Path, top: bool, found: &mut Vec<Location>) {
    match &node.value {
        yaml::Value::Map(entries) => {
            for (key, value) in entries {
                if top && key.name == name {
                    found.push(Location::new(path, key.line));
                }
                let defines = matches!(
                    key.name.as_str(),
                    "vars" | "set_fact" | "ansible.builtin.set_fact"
                );
                find_definitions(value, name, path, defines, found);
            }
        }
        yaml::Value::Seq(items) => {
            for item in items {
                find_definitions(item, name, path, false, found);
            }
        }
        _ => {}
    }
}
