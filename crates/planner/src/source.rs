//! Reading the project's files: parsed once per plan, each recorded as an input of the image.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::error::{ErrorKind, Location, PlanError, Result};
use crate::vault::{self, Vault};
use crate::yaml::{self, Node};

/// The project's files as one plan sees them.
#[derive(Debug)]
pub struct Sources {
    root: PathBuf,
    parsed: HashMap<PathBuf, Rc<Node>>,
    inputs: BTreeSet<PathBuf>,
    vault: Vault,
    /// The first vaulted `copy` source that the vault cannot open.
    vault_problem: Option<PlanError>,
}

impl Sources {
    /// Files below `root`; every path given to the methods is relative to it.
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_owned(),
            parsed: HashMap::new(),
            inputs: BTreeSet::new(),
            vault: Vault::default(),
            vault_problem: None,
        }
    }

    /// These sources, decrypting vaulted YAML (`!vault` values and whole files) with `vault`.
    pub fn with_vault(mut self, vault: Vault) -> Self {
        self.vault = vault;
        self
    }

    /// The folder every path is relative to.
    pub fn root(&self) -> &Path {
        &self.root
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

    fn read_raw(&mut self, rel: &Path) -> Result<String> {
        let text = std::fs::read_to_string(self.root.join(rel))
            .map_err(|e| PlanError::new(Location::file(rel), ErrorKind::Io(e)))?;
        self.inputs.insert(rel.to_owned());
        Ok(text)
    }

    /// The text of `rel` (a template, `mirror.toml`), recorded as an input. A vaulted file is
    /// refused: its text would be rendered into the plan.
    pub fn read_text(&mut self, rel: &Path) -> Result<String> {
        let text = self.read_raw(rel)?;
        if vault::is_vaulted(text.as_bytes()) {
            return Err(PlanError::new(
                Location::new(rel, 1),
                ErrorKind::Vault(
                    "a vault-encrypted file is read as YAML (vars and task files) or copied (copy src), not rendered here: vault the variables it uses instead".into(),
                ),
            ));
        }
        Ok(text)
    }

    /// Records a file or folder that the build will read (a `copy` source). A vaulted file is
    /// opened now, so that a missing or wrong password fails the plan ([`Self::vault_problem`]).
    pub fn record(&mut self, rel: &Path) {
        self.inputs.insert(rel.to_owned());
        if self.vault_problem.is_some() || !self.is_file(rel) {
            return;
        }
        let mut head = [0u8; vault::HEADER.len()];
        let vaulted = std::fs::File::open(self.root.join(rel))
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
            .is_ok_and(|()| vault::is_vaulted(&head));
        if !vaulted {
            return;
        }
        let opened = std::fs::read(self.root.join(rel))
            .map_err(|e| vault::VaultError::Format(e.to_string()))
            .and_then(|bytes| self.vault.open_file(bytes));
        if let Err(e) = opened {
            self.vault_problem = Some(PlanError::new(
                Location::new(rel, 1),
                ErrorKind::Vault(format!("vault-encrypted file: {e}")),
            ));
        }
    }

    /// The first vaulted file recorded with [`Self::record`] that cannot be opened.
    pub fn vault_problem(&mut self) -> Option<PlanError> {
        self.vault_problem.take()
    }

    /// The YAML document in `rel`, parsed once and recorded as an input.
    pub fn yaml(&mut self, rel: &Path) -> Result<Rc<Node>> {
        if let Some(node) = self.parsed.get(rel) {
            return Ok(node.clone());
        }
        let text = self.read_raw(rel)?;
        let whole_file = vault::is_vaulted(text.as_bytes()).then(|| vault::marker(&text));
        let text = match &whole_file {
            Some(_) => self.vault.decrypt_text(&text).map_err(|e| {
                PlanError::new(
                    Location::new(rel, 1),
                    ErrorKind::Vault(format!("vault-encrypted file: {e}")),
                )
            })?,
            None => text,
        };
        let node = yaml::parse_with_vault(&text, &self.vault).map_err(|e| {
            let kind = if e.vault {
                ErrorKind::Vault(e.message)
            } else {
                ErrorKind::Yaml(format!("{} (column {})", e.message, e.col))
            };
            PlanError::new(Location::new(rel, e.line), kind)
        })?;
        if let Some(marker) = whole_file.filter(|_| !is_code(rel)) {
            reveal_leaves(&node, &marker);
        }
        let node = Rc::new(node);
        self.parsed.insert(rel.to_owned(), node.clone());
        Ok(node)
    }

    /// Where `name` is defined in the YAML read so far: a key of a vars file (defaults/, vars/,
    /// vars_files), of a `vars:` mapping, or of a `set_fact:`; sorted by file and line.
    pub fn definitions(&self, name: &str) -> Vec<Location> {
        let mut found = Vec::new();
        for (path, node) in &self.parsed {
            let vars_file = !is_code(path);
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

/// Whether `rel` holds tasks, handlers, role metadata or a recipe (`images/NAME.yml`) rather
/// than variables.
fn is_code(rel: &Path) -> bool {
    let recipe = rel.parent() == Some(Path::new("images"));
    recipe
        || rel
            .components()
            .any(|c| matches!(c.as_os_str().to_str(), Some("tasks" | "handlers" | "meta")))
}

/// Leaves of a vaulted variables file shorter than this are not redacted: masking every `1` or
/// `yes` of the output would hide nothing and garble everything.
const MIN_REDACTED_LEAF: usize = 4;

/// Registers the strings and numbers of a vaulted variables file for redaction: its values are
/// the file's clear text.
fn reveal_leaves(node: &Node, marker: &str) {
    let reveal = |text: &str| {
        if text.trim().chars().count() >= MIN_REDACTED_LEAF {
            vault::reveal(text, marker);
        }
    };
    match &node.value {
        yaml::Value::Str(text) => reveal(text),
        yaml::Value::Int(_) | yaml::Value::Float(_) => {
            node.raw.as_deref().into_iter().for_each(reveal);
            reveal(&node.to_json().to_string());
        }
        yaml::Value::Seq(items) => items.iter().for_each(|i| reveal_leaves(i, marker)),
        yaml::Value::Map(entries) => entries.iter().for_each(|(_, v)| reveal_leaves(v, marker)),
        yaml::Value::Null | yaml::Value::Bool(_) => {}
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vault::fixtures::{vault, FILE11, V11};

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tmp");
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        dir
    }

    #[test]
    fn a_vaulted_vars_file_is_decrypted_and_its_values_hidden() {
        let dir = project(&[("roles/r/vars/main.yml", FILE11)]);
        let mut sources = Sources::new(dir.path()).with_vault(vault("default"));
        let node = sources
            .yaml(Path::new("roles/r/vars/main.yml"))
            .expect("decrypted");
        assert_eq!(node.get("b").and_then(Node::as_str), Some("two"));
        // "two" is shorter than MIN_REDACTED_LEAF: kept; the marker is the file's.
        assert_eq!(vault::redact("two"), "two");
        assert_eq!(
            sources.inputs(),
            vec![PathBuf::from("roles/r/vars/main.yml")]
        );
    }

    #[test]
    fn vault_errors_name_the_file_and_line() {
        let value = format!(
            "a: 1\nsecret: !vault |\n{}",
            V11.lines().map(|l| format!("  {l}\n")).collect::<String>()
        );
        let dir = project(&[("vars.yml", &value), ("whole.yml", FILE11)]);
        let mut sources = Sources::new(dir.path());
        let err = sources
            .yaml(Path::new("vars.yml"))
            .expect_err("no password");
        assert_eq!(err.location, Location::new("vars.yml", 2));
        assert!(err.to_string().contains("--vault-password-file"), "{err}");
        let err = sources
            .yaml(Path::new("whole.yml"))
            .expect_err("no password");
        assert_eq!(err.location, Location::new("whole.yml", 1));
        assert!(matches!(err.kind, ErrorKind::Vault(_)), "{err}");
    }

    #[test]
    fn vaulted_templates_are_refused_and_copy_sources_checked() {
        let dir = project(&[("templates/t.j2", FILE11), ("files/f", FILE11)]);
        let mut sources = Sources::new(dir.path());
        let err = sources
            .read_text(Path::new("templates/t.j2"))
            .expect_err("vaulted template");
        assert!(err.to_string().contains("vault the variables"), "{err}");
        sources.record(Path::new("files/f"));
        let problem = sources
            .vault_problem()
            .expect("no password for a vaulted copy src");
        assert_eq!(problem.location, Location::new("files/f", 1));
        let mut opened = Sources::new(dir.path()).with_vault(vault("default"));
        opened.record(Path::new("files/f"));
        assert!(opened.vault_problem().is_none());
    }
}
