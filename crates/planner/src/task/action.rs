//! Task forms beside the module key: Ansible's older `action:` and the one-loop rule.

use std::path::Path;

use serde_json::{Map, Value as Json};

use super::{located, module_args, wrong, LoopDef};
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

/// `action: copy src=a dest=b` or `action: {module: copy, src: a}`: the module and its
/// arguments, as Ansible's older form of a task names them.
pub(super) fn action_args(
    value: &Node,
    file: &Path,
) -> Result<(&'static ModuleSpec, Map<String, Json>)> {
    let unknown = |name: &str| {
        let candidates = modules::names();
        let short = name.rsplit('.').next().unwrap_or(name);
        located(
            file,
            value.line,
            ErrorKind::UnknownKey {
                context: "module in action",
                key: name.into(),
                suggestion: suggest(short, candidates),
            },
        )
    };
    match &value.value {
        Value::Str(text) => {
            let (name, rest) = crate::free_form::first_word(text)
                .ok_or_else(|| wrong(file, value, "action", "a module and its arguments"))?;
            let spec = modules::lookup(name).ok_or_else(|| unknown(name))?;
            let rest = Node {
                value: Value::Str(rest.to_owned()),
                line: value.line,
                raw: None,
            };
            Ok((spec, module_args(spec, &rest, file)?))
        }
        Value::Map(_) => {
            let Json::Object(mut args) = value.to_json() else {
                return Err(wrong(file, value, "action", "a mapping"));
            };
            let name = match args.remove("module") {
                Some(Json::String(name)) => name,
                _ => return Err(wrong(file, value, "action", "a mapping with module:")),
            };
            let spec = modules::lookup(&name).ok_or_else(|| unknown(&name))?;
            Ok((spec, args))
        }
        _ => Err(wrong(file, value, "action", "a module and its arguments")),
    }
}
