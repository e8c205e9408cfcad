//! One task as written: its keywords, its module or block or include, and its arguments.

use std::path::Path;

pub use crate::free_form::{parse_command, parse_key_values};

use indexmap::IndexMap;
use serde_json::{Map, Value as Json};

use crate::error::{suggest, ErrorKind, Location, PlanError, Result};
use crate::modules::{self, FreeForm, ModuleSpec};
use crate::recipe::{condition_list, string_list, var_map};
use crate::yaml::{Node, Value};

mod action;
mod loop_control;

pub use action::TemplatedAction;
use action::{action_args, loops_once, merge_args_keyword, ActionTarget};

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
    /// `no_log:`.
    pub no_log: Option<Json>,
    /// `become`, `become_user`, `become_method` as written.
    pub become_keywords: BecomeKeywords,
    /// `async:` as written (the task still runs synchronously).
    pub async_val: Option<Json>,
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
    "ignore_unreachable",
];

/// Keywords an image build accepts with a different meaning, and the note the plan shows.
const ACCEPTED_WITH_NOTE: &[(&str, &str)] = &[
    (
        "async",
        "async/poll: the task runs synchronously in an image build",
    ),
    (
        "poll",
        "async/poll: the task runs synchronously in an image build",
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
    for (key, value) in entries {
        match key.name.as_str() {
            "name" => name = Some(text(value, "include_role name", file)?),
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
    })
}

/// `name` without an `ansible.legacy.` prefix (how a role's own module may also be named).
fn legacy_name(name: &str) -> &str {
    name.strip_prefix("ansible.legacy.").unwrap_or(name)
}

/// Parses one task mapping; `role_module` says which names are the role's own modules
/// (`library/`).
pub fn parse_task<'n>(
    node: &'n Node,
    file: &Path,
    role_module: &dyn Fn(&str) -> bool,
) -> Result<TaskDef<'n>> {
    let entries = node
        .as_map()
        .ok_or_else(|| wrong(file, node, "a task", "a mapping"))?;
    let mut def = TaskDef {
        line: node.line,
        name: None,
        action: Action::Block {
            block: node,
            rescue: None,
            always: None,
        },
        when: Vec::new(),
        looping: None,
        loop_var: "item".into(),
        index_var: None,
        loop_extended: false,
        loop_pause: None,
        loop_label: None,
        notes: Vec::new(),
        register: None,
        vars: IndexMap::new(),
        tags: Vec::new(),
        notify: Vec::new(),
        listen: Vec::new(),
        ignore_errors: None,
        changed_when: Vec::new(),
        failed_when: Vec::new(),
        until: None,
        retries: None,
        delay: None,
        environment: None,
        no_log: None,
        become_keywords: BecomeKeywords::default(),
        async_val: None,
        check_mode: None,
        diff: None,
        delegate_to: None,
        on_controller: false,
        refused: None,
    };
    let mut action: Option<(String, Action<'n>)> = None;
    let mut args_kw: Option<&Node> = None;
    let (mut block, mut rescue, mut always) = (None, None, None);
    let set_action = |key: &str,
                      line: usize,
                      a: Action<'n>,
                      slot: &mut Option<(String, Action<'n>)>|
     -> Result<()> {
        if let Some((first, _)) = slot {
            return Err(located(
                file,
                line,
                ErrorKind::TwoModules(first.clone(), key.into()),
            ));
        }
        *slot = Some((key.to_owned(), a));
        Ok(())
    };
    for (key, value) in entries {
        let k = key.name.as_str();
        match k {
            // `name:` with nothing after it is a task without a name, as in Ansible.
            "name" if matches!(value.value, Value::Null) => def.name = None,
            "name" => def.name = Some(text(value, "name", file)?),
            "when" => def.when = condition_list(value, file)?,
            "loop" | "with_items" | "with_list" | "with_dict" | "with_together" | "with_nested"
            | "with_cartesian" | "with_subelements" | "with_first_found" | "with_fileglob" => {
                loops_once(def.looping.as_ref(), k, file, key.line)?;
                let keyword = match k {
                    "loop" => "loop",
                    "with_items" => "with_items",
                    "with_dict" => "with_dict",
                    "with_together" => "with_together",
                    "with_nested" | "with_cartesian" => "with_nested",
                    "with_subelements" => "with_subelements",
                    "with_first_found" => "with_first_found",
                    "with_fileglob" => "with_fileglob",
                    _ => "with_list",
                };
                def.looping = Some(LoopDef {
                    keyword,
                    value: value.to_json(),
                    plugin: None,
                });
            }
            "loop_control" => loop_control::parse(&mut def, value, file)?,
            "register" => {
                let name = text(value, "register", file)?;
                if !crate::vars::is_identifier(&name) {
                    return Err(PlanError::new(
                        Location::new(file, value.line),
                        ErrorKind::Recipe(format!(
                            "register: '{name}' is not a valid variable name (letters, digits and _, not starting with a digit)"
                        )),
                    ));
                }
                def.register = Some(name);
            }
            "vars" => def.vars = var_map(value, "vars", file)?,
            "tags" => def.tags = string_list(value, "tags", file)?,
            "notify" => def.notify = string_list(value, "notify", file)?,
            "listen" => def.listen = string_list(value, "listen", file)?,
            "ignore_errors" => def.ignore_errors = Some(value.to_json()),
            "changed_when" => def.changed_when = condition_list(value, file)?,
            "failed_when" => def.failed_when = condition_list(value, file)?,
            "until" => def.until = Some(value.to_json()),
            "retries" => def.retries = Some(value.to_json()),
            "delay" => def.delay = Some(value.to_json()),
            "environment" => def.environment = Some(value.to_json()),
            "no_log" => def.no_log = Some(value.to_json()),
            "become" => def.become_keywords.enabled = Some(value.to_json()),
            "check_mode" => def.check_mode = Some(value.to_json()),
            "diff" => def.diff = Some(value.to_json()),
            "become_user" => def.become_keywords.user = Some(value.to_json()),
            "become_method" => def.become_keywords.method = Some(value.to_json()),
            "delegate_to" => def.delegate_to = Some((value.to_json(), key.line)),
            "args" => args_kw = Some(value),
            "block" => block = Some(value),
            "rescue" => rescue = Some(value),
            "always" => always = Some(value),
            "include_tasks"
            | "import_tasks"
            | "ansible.builtin.include_tasks"
            | "ansible.builtin.import_tasks" => {
                let (file_name, apply_tags) = include_file(value, file)?;
                let is_static = k.ends_with("import_tasks");
                set_action(
                    k,
                    key.line,
                    Action::Include {
                        file: file_name,
                        is_static,
                        apply_tags,
                    },
                    &mut action,
                )?;
            }
            "include_role"
            | "import_role"
            | "ansible.builtin.include_role"
            | "ansible.builtin.import_role" => {
                let is_static = k.ends_with("import_role");
                set_action(
                    k,
                    key.line,
                    include_role(value, is_static, file)?,
                    &mut action,
                )?;
            }
            "include" | "ansible.builtin.include" => {
                // Removed in ansible-core 2.16, still in many roles: run as include_tasks.
                let (file_name, apply_tags, vars) = legacy_include(value, file)?;
                def.vars.extend(vars);
                def.notes.push(
                    "'include' is deprecated (removed in ansible-core 2.16); imgbuild runs it as include_tasks: write include_tasks (or import_tasks)".into(),
                );
                set_action(
                    k,
                    key.line,
                    Action::Include {
                        file: file_name,
                        is_static: false,
                        apply_tags,
                    },
                    &mut action,
                )?;
            }
            "action" => {
                let found = match action_args(value, file)? {
                    ActionTarget::Known(spec, args) => Action::Module {
                        spec,
                        args,
                        node: value,
                    },
                    ActionTarget::Templated(templated) => Action::TemplatedModule(templated),
                };
                set_action("action", key.line, found, &mut action)?;
            }
            other if KEYWORDS.contains(&other) => {}
            other if ACCEPTED_SILENTLY.contains(&other) => {}
            other if ACCEPTED_WITH_NOTE.iter().any(|(k, _)| *k == other) => {
                if other == "async" {
                    def.async_val = Some(value.to_json());
                }
                if let Some((_, note)) = ACCEPTED_WITH_NOTE.iter().find(|(k, _)| *k == other) {
                    if !def.notes.iter().any(|n| n == note) {
                        def.notes.push((*note).to_owned());
                    }
                }
            }
            other => {
                if let Some((_, why)) = UNSUPPORTED.iter().find(|(u, _)| *u == other) {
                    let refused = ErrorKind::Unsupported {
                        key: other.into(),
                        why: (*why).into(),
                    };
                    def.refused.get_or_insert(located(file, key.line, refused));
                    continue;
                }
                if let Some(plugin) = other.strip_prefix("with_").filter(|p| !p.is_empty()) {
                    loops_once(def.looping.as_ref(), other, file, key.line)?;
                    def.looping = Some(LoopDef {
                        keyword: "with_lookup",
                        value: value.to_json(),
                        plugin: Some(plugin.to_owned()),
                    });
                    continue;
                }
                match modules::lookup(other) {
                    Some(spec) => {
                        let args = module_args(spec, value, file)?;
                        set_action(
                            other,
                            key.line,
                            Action::Module {
                                spec,
                                args,
                                node: value,
                            },
                            &mut action,
                        )?;
                    }
                    // A role's own module: its short name, or `ansible.legacy.` and it.
                    None if role_module(legacy_name(other)) => {
                        let spec = &modules::role_module::SPEC;
                        let args = modules::role_module::wrap(
                            legacy_name(other),
                            module_args(spec, value, file)?,
                        );
                        let node = value;
                        set_action(
                            other,
                            key.line,
                            Action::Module { spec, args, node },
                            &mut action,
                        )?;
                    }
                    None => {
                        let candidates = KEYWORDS.iter().copied().chain(modules::names());
                        let short = other.rsplit('.').next().unwrap_or(other);
                        return Err(located(
                            file,
                            key.line,
                            ErrorKind::UnknownKey {
                                context: "module or task keyword",
                                key: other.into(),
                                suggestion: suggest(short, candidates),
                            },
                        ));
                    }
                }
            }
        }
    }
    if let Some(block) = block {
        if let Some((first, _)) = &action {
            return Err(located(
                file,
                node.line,
                ErrorKind::TwoModules("block".into(), first.clone()),
            ));
        }
        def.action = Action::Block {
            block,
            rescue,
            always,
        };
        return Ok(def);
    }
    if rescue.is_some() || always.is_some() {
        return Err(located(
            file,
            node.line,
            ErrorKind::Recipe("rescue and always belong to a block; add 'block:'".into()),
        ));
    }
    let Some((_, mut found)) = action else {
        if def.refused.is_some() {
            // `local_action:` names its module inside; the task is refused whatever it is.
            return Ok(def);
        }
        return Err(located(file, node.line, ErrorKind::NoModule));
    };
    if let Some(extra) = args_kw {
        merge_args_keyword(extra, &mut found, file)?;
    }
    def.action = found;
    Ok(def)
}

#[cfg(test)]
mod tests;
