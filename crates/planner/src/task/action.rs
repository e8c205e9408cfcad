//! Task forms beside the module key: Ansible's older `action:` and the one-loop rule.

use std::path::Path;

use serde_json::{Map, Value as Json};

use super::{located, module_args, wrong, Action, LoopDef};
use crate::error::{suggest, ErrorKind, Result};
use crate::modules::{self, ModuleSpec};
use crate::yaml::{Node, Value};

/// A second loop keyword on a task that already loops is an error.
pub(super) fn loops_once(
    previous: Option<&LoopDef>,
    keyword: &str,
    file: &Path,
    line: usize,
) -> Result<()> {
    match previous {
        Some(previous) => Err(located(
            file,
            line,
            ErrorKind::Recipe(format!(
                "a task loops once: '{}' and '{keyword}' both given",
                previous.keyword
            )),
        )),
        None => Ok(()),
    }
}

/// What `action:` names.
pub(super) enum ActionTarget<'n> {
    /// A module known now, with its arguments.
    Known(&'static ModuleSpec, Map<String, Json>),
    /// A module a template names.
    Templated(TemplatedAction<'n>),
}

/// `action: "{{ ansible_facts.pkg_mgr }}"`: a module a template names, known once the task's
/// variables are (Ansible templates the action when the task runs).
#[derive(Debug)]
pub struct TemplatedAction<'n> {
    /// The template naming the module.
    pub name: String,
    /// Free-form arguments after the name, read once the module is known.
    pub free_form: Option<String>,
    /// Arguments given as a mapping (`action:`'s own, then `args:`).
    pub args: Map<String, Json>,
    /// The `action:` node.
    pub node: &'n Node,
}

impl TemplatedAction<'_> {
    /// The module `name` (the template rendered) and its arguments.
    pub fn resolve(
        &self,
        name: &str,
        file: &Path,
    ) -> Result<(&'static ModuleSpec, Map<String, Json>)> {
        let spec = modules::lookup(name).ok_or_else(|| unknown_module(name, self.node, file))?;
        let mut args = match &self.free_form {
            Some(text) => {
                let rest = Node {
                    value: Value::Str(text.clone()),
                    line: self.node.line,
                    raw: None,
                };
                module_args(spec, &rest, file)?
            }
            None => Map::new(),
        };
        for (k, v) in &self.args {
            args.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Ok((spec, args))
    }
}

/// An `action:` naming a module imgbuild does not know.
fn unknown_module(name: &str, node: &Node, file: &Path) -> crate::error::PlanError {
    let short = name.rsplit('.').next().unwrap_or(name);
    located(
        file,
        node.line,
        ErrorKind::UnknownKey {
            context: "module in action",
            key: name.into(),
            suggestion: suggest(short, modules::names()),
        },
    )
}

/// `args:` below the module's own arguments (a role's own module keeps them beside its name,
/// role_module::wrap).
pub(super) fn merge_args_keyword(extra: &Node, action: &mut Action, file: &Path) -> Result<()> {
    let args = match action {
        Action::Module { args, spec, .. } => match args.get_mut("args") {
            Some(Json::Object(inner)) if spec.name == modules::role_module::MODULE => inner,
            _ => args,
        },
        Action::TemplatedModule(templated) => &mut templated.args,
        _ => return Ok(()),
    };
    let Json::Object(extra) = extra.to_json() else {
        return Err(wrong(file, extra, "args", "a mapping"));
    };
    for (k, v) in extra {
        args.entry(k).or_insert(v);
    }
    Ok(())
}

/// `action: copy src=a dest=b` or `action: {module: copy, src: a}`: the module and its
/// arguments, as Ansible's older form of a task names them.
pub(super) fn action_args<'n>(value: &'n Node, file: &Path) -> Result<ActionTarget<'n>> {
    let templated = |name: &str, free_form: Option<String>, args: Map<String, Json>| {
        ActionTarget::Templated(TemplatedAction {
            name: name.to_owned(),
            free_form,
            args,
            node: value,
        })
    };
    match &value.value {
        Value::Str(text) => {
            let (name, rest) = crate::free_form::first_word(text)
                .ok_or_else(|| wrong(file, value, "action", "a module and its arguments"))?;
            if crate::template::is_template(name) {
                let free_form = (!rest.is_empty()).then(|| rest.to_owned());
                return Ok(templated(name, free_form, Map::new()));
            }
            let spec = modules::lookup(name).ok_or_else(|| unknown_module(name, value, file))?;
            let rest = Node {
                value: Value::Str(rest.to_owned()),
                line: value.line,
                raw: None,
            };
            Ok(ActionTarget::Known(spec, module_args(spec, &rest, file)?))
        }
        Value::Map(_) => {
            let Json::Object(mut args) = value.to_json() else {
                return Err(wrong(file, value, "action", "a mapping"));
            };
            let name = match args.remove("module") {
                Some(Json::String(name)) => name,
                _ => return Err(wrong(file, value, "action", "a mapping with module:")),
            };
            if crate::template::is_template(&name) {
                return Ok(templated(&name, None, args));
            }
            let spec = modules::lookup(&name).ok_or_else(|| unknown_module(&name, value, file))?;
            Ok(ActionTarget::Known(spec, args))
        }
        _ => Err(wrong(file, value, "action", "a module and its arguments")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::parse_task;
    use crate::yaml::parse;

    #[test]
    fn a_templated_action_is_read_once_its_module_is_known() {
        let node =
            parse("action: \"{{ pm }} name=libuser\"\nargs:\n  state: present\n  name: other\n")
                .expect("yaml");
        let def = parse_task(&node, Path::new("t.yml"), &|_| false).expect("task");
        let Action::TemplatedModule(templated) = &def.action else {
            panic!("not a templated action: {:?}", def.action);
        };
        assert_eq!(templated.name, "{{ pm }}");
        let (spec, args) = templated.resolve("apt", Path::new("t.yml")).expect("apt");
        assert_eq!(spec.name, "apt");
        // The action's own arguments win over `args:`.
        assert_eq!(args["name"], Json::from("libuser"));
        assert_eq!(args["state"], Json::from("present"));
        assert!(templated
            .resolve("no_such_module", Path::new("t.yml"))
            .is_err());
    }
}
