//! Reading one task mapping into a [`TaskDef`]: its keywords, and the one module, include or
//! block it runs.

use std::path::Path;

use indexmap::IndexMap;

use super::action::{action_args, loops_once, merge_args_keyword, ActionTarget};
use super::{
    include_file, include_role, legacy_include, legacy_name, located, loop_control, module_args,
    text, wrong, Action, BecomeKeywords, LoopDef, TaskDef, ACCEPTED_SILENTLY, ACCEPTED_WITH_NOTE,
    KEYWORDS, UNSUPPORTED,
};
use crate::error::{suggest, ErrorKind, Location, PlanError, Result};
use crate::modules;
use crate::recipe::{condition_list, string_list, var_map};
use crate::yaml::{Key, Node, Value};

/// Parses one task mapping; `role_module` says which names imgbuild does not implement but
/// Ansible's own code does (a role's `library/`, a collection's or ansible-core's module).
pub fn parse_task<'n>(
    node: &'n Node,
    file: &Path,
    role_module: &dyn Fn(&str) -> bool,
) -> Result<TaskDef<'n>> {
    let entries = node
        .as_map()
        .ok_or_else(|| wrong(file, node, "a task", "a mapping"))?;
    let mut parser = TaskParser {
        def: TaskDef::empty(node),
        file,
        role_module,
        action: None,
        args_keyword: None,
        block: None,
        rescue: None,
        always: None,
    };
    for (key, value) in entries {
        parser.entry(key, value)?;
    }
    parser.finish(node)
}

/// A task mapping being read, entry by entry.
struct TaskParser<'n, 'f> {
    def: TaskDef<'n>,
    file: &'f Path,
    role_module: &'f dyn Fn(&str) -> bool,
    /// The module or include found, with the key that named it.
    action: Option<(String, Action<'n>)>,
    /// `args:`, merged into the module's arguments at the end.
    args_keyword: Option<&'n Node>,
    block: Option<&'n Node>,
    rescue: Option<&'n Node>,
    always: Option<&'n Node>,
}

impl<'n> TaskDef<'n> {
    /// A task with no keyword set yet, at `node`'s line.
    fn empty(node: &'n Node) -> Self {
        TaskDef {
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
            module_defaults: None,
            no_log: None,
            become_keywords: BecomeKeywords::default(),
            async_val: None,
            poll_val: None,
            check_mode: None,
            diff: None,
            delegate_to: None,
            on_controller: false,
            ignore_unreachable: None,
            unreachable: None,
            refused: None,
        }
    }
}

impl<'n> TaskParser<'n, '_> {
    /// One `key: value` of the task.
    fn entry(&mut self, key: &Key, value: &'n Node) -> Result<()> {
        let k = key.name.as_str();
        if self.keyword(k, key.line, value)? || self.include(k, key.line, value)? {
            return Ok(());
        }
        if KEYWORDS.contains(&k) || ACCEPTED_SILENTLY.contains(&k) {
            return Ok(());
        }
        if let Some((_, note)) = ACCEPTED_WITH_NOTE.iter().find(|(name, _)| *name == k) {
            match k {
                "async" => self.def.async_val = Some(value.to_json()),
                "poll" => self.def.poll_val = Some(value.to_json()),
                _ => {}
            }
            if !self.def.notes.iter().any(|n| n == note) {
                self.def.notes.push((*note).to_owned());
            }
            return Ok(());
        }
        self.other(k, key.line, value)
    }

    /// A task keyword this parser reads; `false` when `k` is none of them.
    fn keyword(&mut self, k: &str, line: usize, value: &'n Node) -> Result<bool> {
        let (def, file) = (&mut self.def, self.file);
        match k {
            // `name:` with nothing after it is a task without a name, as in Ansible.
            "name" if matches!(value.value, Value::Null) => def.name = None,
            "name" => def.name = Some(text(value, "name", file)?),
            "when" => def.when = condition_list(value, file)?,
            "loop" | "with_items" | "with_list" | "with_dict" | "with_together" | "with_nested"
            | "with_cartesian" | "with_subelements" | "with_first_found" | "with_fileglob" => {
                loops_once(def.looping.as_ref(), k, file, line)?;
                def.looping = Some(LoopDef {
                    keyword: loop_keyword(k),
                    value: value.to_json(),
                    plugin: None,
                });
            }
            "loop_control" => loop_control::parse(def, value, file)?,
            "register" => def.register = Some(register_name(value, file)?),
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
            "module_defaults" => def.module_defaults = Some(value.to_json()),
            "no_log" => def.no_log = Some(value.to_json()),
            "ignore_unreachable" => def.ignore_unreachable = Some(value.to_json()),
            "become" => def.become_keywords.enabled = Some(value.to_json()),
            "check_mode" => def.check_mode = Some(value.to_json()),
            "diff" => def.diff = Some(value.to_json()),
            "become_user" => def.become_keywords.user = Some(value.to_json()),
            "become_method" => def.become_keywords.method = Some(value.to_json()),
            "delegate_to" => def.delegate_to = Some((value.to_json(), line)),
            "args" => self.args_keyword = Some(value),
            "block" => self.block = Some(value),
            "rescue" => self.rescue = Some(value),
            "always" => self.always = Some(value),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// An include or import of tasks or a role, or `action:`; `false` when `k` is none.
    fn include(&mut self, k: &str, line: usize, value: &'n Node) -> Result<bool> {
        let file = self.file;
        let found = match k {
            "include_tasks"
            | "import_tasks"
            | "ansible.builtin.include_tasks"
            | "ansible.builtin.import_tasks" => {
                let (file_name, apply_tags) = include_file(value, file)?;
                Action::Include {
                    file: file_name,
                    is_static: k.ends_with("import_tasks"),
                    apply_tags,
                }
            }
            "include_role"
            | "import_role"
            | "ansible.builtin.include_role"
            | "ansible.builtin.import_role" => {
                include_role(value, k.ends_with("import_role"), file)?
            }
            "include" | "ansible.builtin.include" => {
                // Removed in ansible-core 2.16, still in many roles: run as include_tasks.
                let (file_name, apply_tags, vars) = legacy_include(value, file)?;
                self.def.vars.extend(vars);
                self.def.notes.push(
                    "'include' is deprecated (removed in ansible-core 2.16); imgbuild runs it as include_tasks: write include_tasks (or import_tasks)".into(),
                );
                Action::Include {
                    file: file_name,
                    is_static: false,
                    apply_tags,
                }
            }
            "action" => match action_args(value, file)? {
                ActionTarget::Known(spec, args) => Action::Module {
                    spec,
                    args,
                    node: value,
                },
                ActionTarget::Templated(templated) => Action::TemplatedModule(templated),
            },
            _ => return Ok(false),
        };
        self.set_action(k, line, found)?;
        Ok(true)
    }

    /// Any other key: a keyword imgbuild refuses, a `with_<lookup>` loop, a module, a role's
    /// own module, or an error naming the closest known word.
    fn other(&mut self, k: &str, line: usize, value: &'n Node) -> Result<()> {
        let file = self.file;
        if let Some((_, why)) = UNSUPPORTED.iter().find(|(u, _)| *u == k) {
            let refused = ErrorKind::Unsupported {
                key: k.into(),
                why: (*why).into(),
            };
            self.def.refused.get_or_insert(located(file, line, refused));
            return Ok(());
        }
        if let Some(plugin) = k.strip_prefix("with_").filter(|p| !p.is_empty()) {
            loops_once(self.def.looping.as_ref(), k, file, line)?;
            self.def.looping = Some(LoopDef {
                keyword: "with_lookup",
                value: value.to_json(),
                plugin: Some(plugin.to_owned()),
            });
            return Ok(());
        }
        let (spec, args) = match modules::lookup(k) {
            Some(spec) => (spec, module_args(spec, value, file)?),
            // A module imgbuild does not implement, run with Ansible's own code: a role's own
            // module (its short name, or `ansible.legacy.` and it), a collection's or
            // ansible-core's.
            None if (self.role_module)(k) => {
                let spec = &modules::role_module::SPEC;
                let own = module_args(spec, value, file)?;
                (spec, modules::role_module::wrap(legacy_name(k), own))
            }
            None => {
                let candidates = KEYWORDS.iter().copied().chain(modules::names());
                let short = k.rsplit('.').next().unwrap_or(k);
                return Err(located(
                    file,
                    line,
                    ErrorKind::UnknownKey {
                        context: "module or task keyword",
                        key: k.into(),
                        suggestion: suggest(short, candidates),
                    },
                ));
            }
        };
        let node = value;
        self.set_action(k, line, Action::Module { spec, args, node })
    }

    /// Takes `found` as the task's action, unless another key named one already.
    fn set_action(&mut self, key: &str, line: usize, found: Action<'n>) -> Result<()> {
        if let Some((first, _)) = &self.action {
            return Err(located(
                self.file,
                line,
                ErrorKind::TwoModules(first.clone(), key.into()),
            ));
        }
        self.action = Some((key.to_owned(), found));
        Ok(())
    }

    /// The task once every key is read: a block, or the one action with `args:` merged in.
    fn finish(self, node: &Node) -> Result<TaskDef<'n>> {
        let TaskParser {
            mut def,
            file,
            action,
            args_keyword,
            block,
            rescue,
            always,
            ..
        } = self;
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
        if let Some(extra) = args_keyword {
            merge_args_keyword(extra, &mut found, file)?;
        }
        def.action = found;
        Ok(def)
    }
}

/// The loop keyword a `loop`/`with_*` key is planned as (`with_cartesian` is `with_nested`).
fn loop_keyword(key: &str) -> &'static str {
    match key {
        "loop" => "loop",
        "with_items" => "with_items",
        "with_dict" => "with_dict",
        "with_together" => "with_together",
        "with_nested" | "with_cartesian" => "with_nested",
        "with_subelements" => "with_subelements",
        "with_first_found" => "with_first_found",
        "with_fileglob" => "with_fileglob",
        _ => "with_list",
    }
}

/// `register:`'s variable name, refused when it is not one.
fn register_name(value: &Node, file: &Path) -> Result<String> {
    let name = text(value, "register", file)?;
    if !crate::vars::is_identifier(&name) {
        return Err(PlanError::new(
            Location::new(file, value.line),
            ErrorKind::Recipe(format!(
                "register: '{name}' is not a valid variable name (letters, digits and _, not starting with a digit)"
            )),
        ));
    }
    Ok(name)
}
