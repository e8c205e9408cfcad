//! One task as written: its keywords, its module or block or include, and its arguments.

use std::path::Path;

pub use crate::free_form::{parse_command, parse_key_values};

use indexmap::IndexMap;
use serde_json::{Map, Value as Json};

use crate::error::{suggest, ErrorKind, Location, PlanError, Result};
use crate::modules::{FreeForm, ModuleSpec};
use crate::recipe::string_list;
use crate::yaml::{Node, Value};

mod action;
mod loop_control;
mod parse;

pub use action::TemplatedAction;
pub use parse::parse_task;

/// What a task does.
#[derive(Debug)]
pub enum Action<'n> {
    /// Runs a module.
    Module {
        /// The module.
        spec: &'static ModuleSpec,
        /// Its arguments as written (`args:` merged below the module's own).
        args: Map<String, Json>,
        /// The module key's line (for the `mode: 644` warning).
        node: &'n Node,
    },
    /// Runs a module a template names (`action: "{{ ansible_facts.pkg_mgr }}"`).
    TemplatedModule(TemplatedAction<'n>),
    /// A block with optional `rescue` and `always`.
    Block {
        /// The tasks.
        block: &'n Node,
        /// Run when a block task fails.
        rescue: Option<&'n Node>,
        /// Run in any case.
        always: Option<&'n Node>,
    },
    /// `include_tasks` (dynamic) or `import_tasks` (static).
    Include {
        /// The file name (may be a template).
        file: Json,
        /// True for `import_tasks`.
        is_static: bool,
        /// `apply: {tags: ...}` of `include_tasks`.
        apply_tags: Vec<String>,
    },
    /// `include_role` (dynamic) or `import_role` (static).
    IncludeRole {
        /// The role name.
        name: String,
        /// `tasks_from:` (default `main`).
        tasks_from: Option<String>,
        /// `defaults_from:`.
        defaults_from: Option<String>,
        /// `vars_from:`.
        vars_from: Option<String>,
        /// True for `import_role`.
        is_static: bool,
        /// `apply: {tags: ...}` of `include_role`.
        apply_tags: Vec<String>,
        /// `public: true` of `include_role`: its defaults and vars stay for later tasks.
        public: bool,
    },
}

/// How a task loops.
#[derive(Debug)]
pub struct LoopDef {
    /// `loop`, `with_items`, `with_list`, or a lookup loop (`with_dict`, `with_first_found`, ...).
    pub keyword: &'static str,
    /// The list or the expression giving it.
    pub value: Json,
    /// For `with_<plugin>` of any other lookup (`with_sequence`, `with_random_choice`, ...): the
    /// lookup whose `query()` gives the items, with `value` as its terms.
    pub plugin: Option<String>,
}

/// A parsed task.
#[derive(Debug)]
pub struct TaskDef<'n> {
    /// The task's first line.
    pub line: usize,
    /// `name:`.
    pub name: Option<String>,
    /// What it does.
    pub action: Action<'n>,
    /// `when:` conditions (all must hold).
    pub when: Vec<Json>,
    /// `loop:` or `with_*:`.
    pub looping: Option<LoopDef>,
    /// `loop_control.loop_var` (default `item`).
    pub loop_var: String,
    /// `loop_control.index_var`.
    pub index_var: Option<String>,
    /// `loop_control.extended`: `ansible_loop` is set in each iteration.
    pub loop_extended: bool,
    /// `loop_control.pause`: seconds between iterations.
    pub loop_pause: Option<f64>,
    /// `loop_control.label`.
    pub loop_label: Option<Json>,
    /// Notes for the plan's warnings (a keyword accepted with another meaning).
    pub notes: Vec<String>,
    /// `register:`.
    pub register: Option<String>,
    /// `vars:`.
    pub vars: IndexMap<String, Json>,
    /// `tags:`.
    pub tags: Vec<String>,
    /// `notify:`.
    pub notify: Vec<String>,
    /// `listen:` (handlers).
    pub listen: Vec<String>,
    /// `ignore_errors:`.
    pub ignore_errors: Option<Json>,
    /// `changed_when:` conditions.
    pub changed_when: Vec<Json>,
    /// `failed_when:` conditions.
    pub failed_when: Vec<Json>,
    /// `until:` condition.
    pub until: Option<Json>,
    /// `retries:`.
    pub retries: Option<Json>,
    /// `delay:`.
    pub delay: Option<Json>,
    /// `environment:`.
    pub environment: Option<Json>,
    /// `module_defaults:`, as written (a mapping or a list of mappings).
    pub module_defaults: Option<Json>,
    /// `no_log:`.
    pub no_log: Option<Json>,
    /// `become`, `become_user`, `become_method` as written.
    pub become_keywords: BecomeKeywords,
    /// `async:` as written (the task runs to its end before the next one starts).
    pub async_val: Option<Json>,
    /// `poll:` as written (`0` with `async`: the task registers a job for `async_status`).
    pub poll_val: Option<Json>,
    /// `check_mode:` as written.
    pub check_mode: Option<Json>,
    /// `diff:` as written.
    pub diff: Option<Json>,
    /// `delegate_to:` as written, with its line: the planner accepts only a delegation to the
    /// image itself.
    pub delegate_to: Option<(Json, usize)>,
    /// Set by the planner: `delegate_to` names the controller, and the task works in the
    /// build's controller folder.
    pub on_controller: bool,
    /// `ignore_unreachable:` as written.
    pub ignore_unreachable: Option<Json>,
    /// Set by the planner: the task is delegated to another host and tolerates it being
    /// unreachable; the build registers it unreachable, with this message.
    pub unreachable: Option<String>,
    /// A keyword an image build does not run (`local_action`, ...), with why: an error for a
    /// task; a handler that has one is refused only if something notifies it, as Ansible runs
    /// a handler only when notified.
    pub refused: Option<PlanError>,
}

/// `become`, `become_user` and `become_method` of a task or of the blocks around it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BecomeKeywords {
    /// `become:`.
    pub enabled: Option<Json>,
    /// `become_user:`.
    pub user: Option<Json>,
    /// `become_method:`.
    pub method: Option<Json>,
}

impl BecomeKeywords {
    /// These keywords over `outer`'s (a block's): each one written here wins.
    pub fn over(&self, outer: &Self) -> Self {
        Self {
            enabled: self.enabled.clone().or_else(|| outer.enabled.clone()),
            user: self.user.clone().or_else(|| outer.user.clone()),
            method: self.method.clone().or_else(|| outer.method.clone()),
        }
    }
}

/// Keywords accepted on tasks and blocks.
const KEYWORDS: &[&str] = &[
    "name",
    "when",
    "loop",
    "with_items",
    "with_list",
    "with_dict",
    "with_together",
    "with_nested",
    "with_cartesian",
    "with_subelements",
    "with_first_found",
    "with_fileglob",
    "loop_control",
    "register",
    "vars",
    "tags",
    "block",
    "rescue",
    "always",
    "include_tasks",
    "import_tasks",
    "include_role",
    "import_role",
    "ignore_errors",
    "changed_when",
    "failed_when",
    "environment",
    "become",
    "become_user",
    "become_method",
    "become_flags",
    "notify",
    "args",
    "until",
    "retries",
    "delay",
    "no_log",
    "listen",
    "check_mode",
    "diff",
    "collections",
    "module_defaults",
    "throttle",
    "timeout",
    "debugger",
];

/// Keywords an image build accepts with a different meaning, and the note the plan shows.
const ACCEPTED_WITH_NOTE: &[(&str, &str)] = &[
    (
        "async",
        "async: the task runs to its end before the next one starts (with poll: 0, it registers the job async_status reports)",
    ),
    (
        "poll",
        "async: the task runs to its end before the next one starts (with poll: 0, it registers the job async_status reports)",
    ),
    (
        "connection",
        "connection is ignored: tasks always run in the build rootfs",
    ),
];

/// Keywords an image build accepts because it already does what they ask.
const ACCEPTED_SILENTLY: &[&str] = &[
    // Every task of an image build runs once.
    "run_once",
    // Every error already stops an image build.
    "any_errors_fatal",
];

/// Ansible keywords that image builds do not run, and why.
const UNSUPPORTED: &[(&str, &str)] = &[
    (
        "local_action",
        "an image build has no controller host to run on; use a task in the rootfs",
    ),
    ("delegate_facts", "an image build has no other hosts"),
    ("remote_user", "tasks run as root in the build rootfs"),
    (
        "port",
        "tasks run in the build rootfs, not over a connection",
    ),
];

fn located(file: &Path, line: usize, kind: ErrorKind) -> PlanError {
    PlanError::new(Location::new(file, line), kind)
}

fn wrong(file: &Path, node: &Node, what: &str, expected: &'static str) -> PlanError {
    located(
        file,
        node.line,
        ErrorKind::WrongType {
            what: what.into(),
            expected,
            found: node.type_name(),
        },
    )
}

fn text(node: &Node, what: &str, file: &Path) -> Result<String> {
    match &node.value {
        Value::Str(s) => Ok(s.clone()),
        Value::Int(i) => Ok(i.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        _ => Err(wrong(file, node, what, "a string")),
    }
}

fn module_args(spec: &ModuleSpec, node: &Node, file: &Path) -> Result<Map<String, Json>> {
    match &node.value {
        Value::Null => Ok(Map::new()),
        Value::Map(_) => match node.to_json() {
            Json::Object(map) => Ok(map),
            _ => Ok(Map::new()),
        },
        Value::Str(s) => match spec.free_form {
            FreeForm::Command(keys) => parse_command(s, keys).map_err(|e| {
                located(
                    file,
                    node.line,
                    ErrorKind::Module {
                        module: spec.name.into(),
                        message: e.to_string(),
                    },
                )
            }),
            FreeForm::KeyValue => parse_key_values(s).map_err(|word| {
                located(
                    file,
                    node.line,
                    ErrorKind::Module {
                        module: spec.name.into(),
                        message: format!(
                            "'{word}' is not a key=value word; write the arguments as a mapping"
                        ),
                    },
                )
            }),
        },
        _ => Err(wrong(
            file,
            node,
            &format!("the arguments of '{}'", spec.name),
            "a mapping or a string",
        )),
    }
}

/// `include: file.yml key=value ...`: the file, and the words after it as variables.
fn legacy_include(node: &Node, file: &Path) -> Result<(Json, Vec<String>, IndexMap<String, Json>)> {
    let Value::Str(text) = &node.value else {
        let (name, tags) = include_file(node, file)?;
        return Ok((name, tags, IndexMap::new()));
    };
    let (name, rest) = match crate::free_form::first_word(text) {
        Some(split) => split,
        None => (text.as_str(), ""),
    };
    let vars = parse_key_values(rest).map_err(|word| {
        located(
            file,
            node.line,
            ErrorKind::Recipe(format!(
                "include: '{word}' is not a key=value word after the file name"
            )),
        )
    })?;
    Ok((Json::from(name), Vec::new(), vars.into_iter().collect()))
}

fn include_file(node: &Node, file: &Path) -> Result<(Json, Vec<String>)> {
    match &node.value {
        Value::Str(text) => include_free_form(text, file, node.line).map(|n| (n, Vec::new())),
        Value::Map(entries) => {
            let mut name = None;
            let mut tags = Vec::new();
            for (key, value) in entries {
                match key.name.as_str() {
                    "file" | "_raw_params" => name = Some(value.to_json()),
                    "apply" => {
                        if let Some(t) = value.get("tags") {
                            tags = string_list(t, "tags", file)?;
                        }
                    }
                    other => {
                        return Err(located(
                            file,
                            key.line,
                            ErrorKind::UnknownKey {
                                context: "include_tasks parameter",
                                key: other.into(),
                                suggestion: suggest(other, ["file", "apply"]),
                            },
                        ))
                    }
                }
            }
            name.map(|n| (n, tags)).ok_or_else(|| {
                located(
                    file,
                    node.line,
                    ErrorKind::Recipe("include_tasks needs 'file:'".into()),
                )
            })
        }
        _ => Err(wrong(
            file,
            node,
            "include_tasks",
            "a file name or a mapping with 'file:'",
        )),
    }
}

/// The file of `include_tasks: TEXT`. Ansible reads a free form with an `=` in it as
/// `key=value` options (even inside `{{ }}`: matched with ansible-playbook 2.14, which fails
/// with "Invalid options for include_tasks"), so only `file=NAME` is a file there.
fn include_free_form(text: &str, file: &Path, line: usize) -> Result<Json> {
    if !text.contains('=') {
        return Ok(Json::from(text));
    }
    match text.trim().strip_prefix("file=") {
        Some(name) if !name.contains(char::is_whitespace) => Ok(Json::from(name)),
        _ => Err(located(
            file,
            line,
            ErrorKind::Recipe(format!(
                "include_tasks: Ansible reads this free form as key=value options because of \
                 its '=' (\"{text}\" is no file name to it); write the file under `file:`"
            )),
        )),
    }
}

fn include_role(node: &Node, is_static: bool, file: &Path) -> Result<Action<'static>> {
    let keys = [
        "name",
        "tasks_from",
        "vars_from",
        "defaults_from",
        "handlers_from",
        "apply",
        "public",
        "allow_duplicates",
        "rolespec_validate",
    ];
    let entries = node
        .as_map()
        .ok_or_else(|| wrong(file, node, "include_role", "a mapping with 'name:'"))?;
    let mut name = None;
    let (mut tasks_from, mut vars_from, mut defaults_from) = (None, None, None);
    let mut apply_tags = Vec::new();
    let mut public = false;
    for (key, value) in entries {
        match key.name.as_str() {
            "name" => name = Some(text(value, "include_role name", file)?),
            "public" => {
                public = matches!(&value.value, Value::Bool(true))
                    || matches!(&value.value, Value::Str(s) if ["yes", "true", "on", "1"].contains(&s.to_lowercase().as_str()));
            }
            "tasks_from" => tasks_from = Some(text(value, "tasks_from", file)?),
            "vars_from" => vars_from = Some(text(value, "vars_from", file)?),
            "defaults_from" => defaults_from = Some(text(value, "defaults_from", file)?),
            "apply" => {
                if let Some(t) = value.get("tags") {
                    apply_tags = string_list(t, "tags", file)?;
                }
            }
            k if keys.contains(&k) => {}
            other => {
                return Err(located(
                    file,
                    key.line,
                    ErrorKind::UnknownKey {
                        context: "include_role parameter",
                        key: other.into(),
                        suggestion: suggest(other, keys),
                    },
                ))
            }
        }
    }
    let name = name.ok_or_else(|| {
        located(
            file,
            node.line,
            ErrorKind::Recipe("include_role needs 'name:'".into()),
        )
    })?;
    Ok(Action::IncludeRole {
        name,
        tasks_from,
        defaults_from,
        vars_from,
        is_static,
        apply_tags,
        public,
    })
}

/// `name` without an `ansible.legacy.` prefix (how a role's own module may also be named).
fn legacy_name(name: &str) -> &str {
    name.strip_prefix("ansible.legacy.").unwrap_or(name)
}

#[cfg(test)]
mod tests;
