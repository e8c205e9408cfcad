//! The project (its `images/`, `roles/` and `mirror.toml`) and its recipes: Ansible playbooks
//! of one play, accepted as sites write them.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde_json::Value as Json;

use crate::error::{suggest, ErrorKind, Location, PlanError, Result};
use crate::source::Sources;
use crate::yaml::{Key, Node, Value};

/// A project root: the folder holding `images/`.
#[derive(Debug, Clone)]
pub struct Project {
    /// The root folder.
    pub root: PathBuf,
}

impl Project {
    /// The nearest ancestor of `start` (itself included) that holds `images/`.
    pub fn discover(start: &Path) -> Option<Self> {
        start
            .ancestors()
            .find(|dir| dir.join("images").is_dir())
            .map(|dir| Self {
                root: dir.to_owned(),
            })
    }

    /// The project at `root`, which must hold `images/`.
    pub fn at(root: &Path) -> Result<Self> {
        if root.join("images").is_dir() {
            Ok(Self {
                root: root.to_owned(),
            })
        } else {
            Err(PlanError::unlocated(ErrorKind::Recipe(format!(
                "{} holds no images/ folder; run imgbuild inside a project or pass -C DIR",
                root.display()
            ))))
        }
    }

    /// The image names: `images/*.yml` and `*.yaml` file stems, sorted.
    pub fn images(&self) -> Result<Vec<String>> {
        let dir = self.root.join("images");
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| PlanError::new(Location::file("images"), ErrorKind::Io(e)))?;
        let mut names: Vec<String> = entries
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.path())
            .filter(|path| path.is_file())
            .filter(|path| {
                matches!(
                    path.extension().and_then(|e| e.to_str()),
                    Some("yml" | "yaml")
                )
            })
            .filter_map(|path| path.file_stem().and_then(|s| s.to_str()).map(str::to_owned))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// The recipe file of `image`, relative to the root.
    pub fn recipe_path(&self, image: &str) -> Result<PathBuf> {
        for ext in ["yml", "yaml"] {
            let rel = PathBuf::from("images").join(format!("{image}.{ext}"));
            if self.root.join(&rel).is_file() {
                return Ok(rel);
            }
        }
        let names = self.images()?;
        Err(PlanError::unlocated(ErrorKind::UnknownImage {
            name: image.to_owned(),
            suggestion: suggest(image, names.iter().map(String::as_str)),
        }))
    }
}

/// A role named in a recipe's `roles:`.
#[derive(Debug, Clone)]
pub struct RoleRef {
    /// The role's name (a folder below `roles/`, possibly nested such as `common/bootstrap`).
    pub name: String,
    /// Line of the entry.
    pub line: usize,
    /// Role parameters and `vars:` of the entry.
    pub vars: IndexMap<String, Json>,
    /// `tags:` of the entry, inherited by every task of the role.
    pub tags: Vec<String>,
    /// `when:` of the entry.
    pub when: Vec<Json>,
    /// `environment:` of the entry, for every task of the role.
    pub environment: Option<Json>,
    /// `module_defaults:` of the entry, for every task of the role.
    pub module_defaults: Option<Json>,
}

/// A recipe: `images/<name>.yml`.
#[derive(Debug, Clone)]
pub struct Recipe {
    /// The image name (the file stem).
    pub image: String,
    /// The file, relative to the project root.
    pub path: PathBuf,
    /// `vars:` and `vars_files:` merged.
    pub vars: IndexMap<String, Json>,
    /// An explicit `facts:` map.
    pub facts: IndexMap<String, Json>,
    /// Play-level `tags:`.
    pub tags: Vec<String>,
    /// Play-level `environment:`.
    pub environment: Option<Json>,
    /// Play-level `module_defaults:`.
    pub module_defaults: Option<Json>,
    /// The roles, in order.
    pub roles: Vec<RoleRef>,
    /// `pre_tasks`, `tasks` and `post_tasks`, each planned as a pseudo-role.
    pub task_lists: Vec<(&'static str, Node)>,
}

const PLAY_KEYS: &[&str] = &[
    "name",
    "hosts",
    "become",
    "become_user",
    "become_method",
    "gather_facts",
    "vars",
    "vars_files",
    "roles",
    "tasks",
    "pre_tasks",
    "post_tasks",
    "facts",
    "environment",
    "tags",
    "connection",
];

const ROLE_ENTRY_KEYS: &[&str] = &[
    "role",
    "name",
    "vars",
    "tags",
    "when",
    "become",
    "become_user",
];

/// Reads a value that Ansible accepts as one string or a list of strings (tags, notify).
pub fn string_list(node: &Node, what: &str, file: &Path) -> Result<Vec<String>> {
    let wrong = |found| {
        PlanError::new(
            Location::new(file, node.line),
            ErrorKind::WrongType {
                what: what.into(),
                expected: "a string or a list of strings",
                found,
            },
        )
    };
    let scalar = |n: &Node| -> Option<String> {
        match &n.value {
            Value::Str(s) => Some(s.clone()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(f) => Some(f.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    };
    match &node.value {
        Value::Null => Ok(Vec::new()),
        Value::Seq(items) => items
            .iter()
            .map(|n| scalar(n).ok_or_else(|| wrong(n.type_name())))
            .collect(),
        Value::Str(s) if what == "tags" => Ok(s
            .split(',')
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect()),
        _ => scalar(node)
            .map(|s| vec![s])
            .ok_or_else(|| wrong(node.type_name())),
    }
}

/// Reads a `when:`-like value: one condition or a list of them.
pub fn condition_list(node: &Node, file: &Path) -> Result<Vec<Json>> {
    match &node.value {
        Value::Seq(items) => items.iter().map(|n| condition(n, file)).collect(),
        _ => Ok(vec![condition(node, file)?]),
    }
}

fn condition(node: &Node, file: &Path) -> Result<Json> {
    match &node.value {
        Value::Str(_) | Value::Bool(_) => Ok(node.to_json()),
        _ => Err(PlanError::new(
            Location::new(file, node.line),
            ErrorKind::WrongType {
                what: "a condition".into(),
                expected: "an expression or a boolean",
                found: node.type_name(),
            },
        )),
    }
}

/// Reads a mapping of variables.
pub fn var_map(node: &Node, what: &str, file: &Path) -> Result<IndexMap<String, Json>> {
    match &node.value {
        Value::Null => Ok(IndexMap::new()),
        Value::Map(entries) => {
            for (key, _) in entries {
                if !crate::vars::is_identifier(&key.name) {
                    return Err(PlanError::new(
                        Location::new(file, key.line),
                        ErrorKind::Recipe(format!("'{}' is not a valid variable name (letters, digits and _, not starting with a digit)", key.name)),
                    ));
                }
            }
            Ok(entries
                .iter()
                .map(|(k, v)| (k.name.clone(), v.to_json()))
                .collect())
        }
        _ => Err(PlanError::new(
            Location::new(file, node.line),
            ErrorKind::WrongType {
                what: what.into(),
                expected: "a mapping",
                found: node.type_name(),
            },
        )),
    }
}

impl Recipe {
    /// Loads `images/<image>.yml`.
    pub fn load(project: &Project, sources: &mut Sources, image: &str) -> Result<Self> {
        let path = project.recipe_path(image)?;
        let doc = sources.yaml(&path)?;
        let play = the_one_play(&doc, &path)?;
        let entries = play.as_map().ok_or_else(|| {
            PlanError::new(
                Location::new(&path, play.line),
                ErrorKind::WrongType {
                    what: "a play".into(),
                    expected: "a mapping",
                    found: play.type_name(),
                },
            )
        })?;
        let mut recipe = Recipe {
            image: image.to_owned(),
            path: path.clone(),
            vars: IndexMap::new(),
            facts: IndexMap::new(),
            tags: Vec::new(),
            environment: None,
            module_defaults: None,
            roles: Vec::new(),
            task_lists: Vec::new(),
        };
        let mut vars_files = Vec::new();
        for (key, value) in entries {
            if key.name == "vars_files" {
                vars_files = string_list(value, "vars_files", &path)?;
            } else {
                recipe.play_key(key, value)?;
            }
        }
        recipe.read_vars_files(sources, &vars_files)?;
        if let Some(Json::String(name)) = recipe.vars.get("image_name") {
            if name != image {
                return Err(PlanError::new(Location::file(&path), ErrorKind::Recipe(format!(
                    "image_name '{name}' differs from the file name '{image}'; make them the same (imgbuild builds images by file name)"
                ))));
            }
        }
        Ok(recipe)
    }

    /// One key of the play (`vars_files` aside).
    fn play_key(&mut self, key: &Key, value: &Node) -> Result<()> {
        let path = self.path.clone();
        let at = |line| Location::new(&path, line);
        match key.name.as_str() {
            "vars" => self.vars = var_map(value, "vars", &path)?,
            "facts" => self.facts = var_map(value, "facts", &path)?,
            "tags" => self.tags = string_list(value, "tags", &path)?,
            "environment" => self.environment = Some(value.to_json()),
            "module_defaults" => self.module_defaults = Some(value.to_json()),
            "roles" => self.roles = Self::role_refs(value, &path)?,
            "pre_tasks" | "tasks" | "post_tasks" => {
                let label = match key.name.as_str() {
                    "pre_tasks" => "pre_tasks",
                    "tasks" => "tasks",
                    _ => "post_tasks",
                };
                self.task_lists.push((label, value.clone()));
            }
            "handlers" => {
                return Err(PlanError::new(at(key.line), ErrorKind::Unsupported {
                    key: "handlers".into(),
                    why: "play-level handlers are not supported; put them in a role's handlers/main.yml".into(),
                }))
            }
            known if PLAY_KEYS.contains(&known) => {}
            other => {
                return Err(PlanError::new(at(key.line), ErrorKind::UnknownKey {
                    context: "play key",
                    key: other.to_owned(),
                    suggestion: suggest(other, PLAY_KEYS.iter().copied()),
                }))
            }
        }
        Ok(())
    }

    /// The play's `vars_files` (relative to the recipe), their variables over the play's.
    fn read_vars_files(&mut self, sources: &mut Sources, files: &[String]) -> Result<()> {
        let recipe_dir = self
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        for file in files {
            let rel = recipe_dir.join(file);
            if !sources.is_file(&rel) {
                return Err(PlanError::new(
                    Location::file(&self.path),
                    ErrorKind::MissingFile {
                        what: "vars file",
                        name: file.clone(),
                        searched: rel.display().to_string(),
                    },
                ));
            }
            let node = sources.yaml(&rel)?;
            for (k, v) in var_map(&node, "a vars file", &rel)? {
                self.vars.insert(k, v);
            }
        }
        Ok(())
    }

    /// Role entries as a play's `roles:` (or a role's `dependencies:`) lists them.
    pub(crate) fn role_refs(node: &Node, path: &Path) -> Result<Vec<RoleRef>> {
        let items = match &node.value {
            Value::Null => return Ok(Vec::new()),
            Value::Seq(items) => items,
            _ => {
                return Err(PlanError::new(
                    Location::new(path, node.line),
                    ErrorKind::WrongType {
                        what: "roles".into(),
                        expected: "a list of role names",
                        found: node.type_name(),
                    },
                ))
            }
        };
        items
            .iter()
            .map(|item| Self::role_ref(item, path))
            .collect()
    }

    fn role_ref(item: &Node, path: &Path) -> Result<RoleRef> {
        let at = Location::new(path, item.line);
        match &item.value {
            Value::Str(name) if !name.trim().is_empty() => Ok(RoleRef {
                name: name.trim().to_owned(),
                line: item.line,
                vars: IndexMap::new(),
                tags: Vec::new(),
                when: Vec::new(),
                environment: None,
                module_defaults: None,
            }),
            Value::Map(entries) => {
                let name = item
                    .get("role")
                    .or_else(|| item.get("name"))
                    .and_then(Node::as_str)
                    .ok_or_else(|| {
                        PlanError::new(
                            at.clone(),
                            ErrorKind::Recipe("a role entry needs 'role: NAME'".into()),
                        )
                    })?;
                let mut role = RoleRef {
                    name: name.to_owned(),
                    line: item.line,
                    vars: IndexMap::new(),
                    tags: Vec::new(),
                    when: Vec::new(),
                    environment: None,
                    module_defaults: None,
                };
                for (key, value) in entries {
                    match key.name.as_str() {
                        "role" | "name" | "become" | "become_user" => {}
                        "vars" => role.vars.extend(var_map(value, "vars", path)?),
                        "tags" => role.tags = string_list(value, "tags", path)?,
                        "when" => role.when = condition_list(value, path)?,
                        "environment" => role.environment = Some(value.to_json()),
                        "module_defaults" => role.module_defaults = Some(value.to_json()),
                        param => {
                            if ROLE_ENTRY_KEYS.contains(&param) {
                                continue;
                            }
                            role.vars.insert(param.to_owned(), value.to_json());
                        }
                    }
                }
                Ok(role)
            }
            _ => Err(PlanError::new(
                at,
                ErrorKind::WrongType {
                    what: "a role entry".into(),
                    expected: "a role name or a mapping with 'role:'",
                    found: item.type_name(),
                },
            )),
        }
    }
}

/// The recipe's one play, or why the file is not a playbook of one play.
fn the_one_play<'d>(doc: &'d Node, path: &Path) -> Result<&'d Node> {
    let at = |line| Location::new(path, line);
    match &doc.value {
        Value::Null => Err(PlanError::new(
            Location::file(path),
            ErrorKind::Empty("a playbook: a list with one play"),
        )),
        Value::Seq(plays) if plays.len() == 1 => Ok(&plays[0]),
        Value::Seq(plays) if plays.is_empty() => Err(PlanError::new(
            at(doc.line),
            ErrorKind::Recipe(
                "the playbook has no play; write one play with hosts, vars and roles".into(),
            ),
        )),
        Value::Seq(plays) => Err(PlanError::new(
            at(plays[1].line),
            ErrorKind::Recipe(
                "a recipe holds one play; move the second play into its own image file".into(),
            ),
        )),
        // ansible-playbook refuses it too ("A playbook must be a list of plays").
        Value::Map(_) => Err(PlanError::new(
            at(doc.line),
            ErrorKind::Recipe(
                "a recipe is a list of plays, and this is a mapping; put '- ' before its first key and indent the rest of the play under it"
                    .into(),
            ),
        )),
        _ => Err(PlanError::new(
            at(doc.line),
            ErrorKind::WrongType {
                what: "a recipe".into(),
                expected: "a list with one play",
                found: doc.type_name(),
            },
        )),
    }
}
