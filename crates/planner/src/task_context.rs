//! What a task inherits from the role, blocks and includes around it, and the variables a
//! role's tasks see of the role itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value as Json;

use crate::task::BecomeKeywords;
use crate::vars::{Layer, Scope, VarValue};

/// What a task inherits from the role, blocks and includes around it.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    /// The recipe role (layer) being planned.
    pub layer: Arc<str>,
    /// The folder of the role whose files are used (changes with include_role).
    pub role_dir: Option<PathBuf>,
    /// The task file being read.
    pub file: PathBuf,
    /// Variables below `set_fact`.
    pub scope: Scope,
    /// Conditions of enclosing blocks that only the build can decide.
    pub when: Vec<String>,
    /// Inherited tags.
    pub tags: Vec<String>,
    /// Inherited `environment:` mappings, outermost first (what Ansible's `environment`
    /// variable lists).
    pub environment: Vec<IndexMap<String, Json>>,
    /// Inherited `module_defaults:` (play, role, blocks, includes), outermost first, as
    /// written.
    pub module_defaults: Vec<Json>,
    /// Inherited `ignore_errors`.
    pub ignore_errors: Option<Json>,
    /// Inherited `become` keywords.
    pub become_keywords: BecomeKeywords,
    /// Inherited `check_mode`.
    pub check_mode: Option<Json>,
    /// Inherited `diff`.
    pub diff: Option<Json>,
    /// Planning handlers (no tag selection).
    pub handlers: bool,
    /// Inside a block with `rescue`: a task's failure is caught.
    pub rescued: bool,
    /// Include nesting depth.
    pub depth: usize,
    /// Inherited `delegate_to` (of a block), with its line.
    pub delegate_to: Option<(Json, usize)>,
    /// Read only if the build runs it: inside a dynamic include under a `when` the build
    /// decides, which Ansible reads only when it runs.
    pub loaded_at_run: bool,
}

/// `role_name`, `ansible_role_name` (with its collection), `ansible_collection_name`,
/// `role_path` (relative to the project root) and `ansible_search_path` for a role's tasks.
pub(crate) fn role_magic(name: &str, role_dir: &Path) -> Arc<Layer> {
    use crate::collections::{collection_of, role_fqcn, short_name};
    let mut layer = Layer::new();
    layer.insert(
        "role_name".into(),
        VarValue::Raw(Json::String(short_name(name).to_owned())),
    );
    layer.insert(
        "ansible_role_name".into(),
        VarValue::Raw(Json::String(role_fqcn(name, role_dir))),
    );
    layer.insert(
        "ansible_collection_name".into(),
        VarValue::Raw(collection_of(role_dir).map_or(Json::Null, Json::String)),
    );
    layer.insert(
        "role_path".into(),
        VarValue::Raw(Json::String(role_dir.display().to_string())),
    );
    // Where Ansible looks for a role task's relative paths: the role, its tasks, the playbook.
    layer.insert(
        "ansible_search_path".into(),
        VarValue::Raw(serde_json::json!([
            "{{ role_path }}",
            "{{ role_path }}/tasks",
            "{{ playbook_dir }}"
        ])),
    );
    Arc::new(layer)
}
