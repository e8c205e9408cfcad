//! Template errors turned into located plan errors that say what to do.

use crate::error::{ErrorKind, Location, PlanError};
use crate::planner::Planner;
use crate::template::TemplateError;

impl Planner<'_> {
    /// A cycle `a -> b -> a` with where each variable is defined: `a (roles/r/defaults/main.yml:1)
    /// -> b (...) -> a`.
    fn where_defined(&self, chain: &str) -> String {
        let names: Vec<&str> = chain.split(" -> ").collect();
        names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let first = names.iter().position(|n| n == name) == Some(i);
                match self.sources.definitions(name).first() {
                    Some(at) if first && i + 1 < names.len() => format!("{name} ({at})"),
                    _ => (*name).to_owned(),
                }
            })
            .collect::<Vec<_>>()
            .join(" -> ")
    }

    /// Turns a template error into a located plan error naming the task.
    pub(crate) fn template_error(
        &self,
        at: &Location,
        task: Option<&str>,
        e: TemplateError,
    ) -> PlanError {
        let kind = match e {
            TemplateError::Undefined { name, chain } => {
                let chain = if chain.is_empty() {
                    String::new()
                } else {
                    format!(" (needed by {})", chain.join(" -> "))
                };
                match crate::facts::host_only(&name) {
                    Some(short) => ErrorKind::HostFact {
                        short: short.to_owned(),
                        name,
                        chain,
                    },
                    None => ErrorKind::Undefined { name, chain },
                }
            }
            TemplateError::Cycle(chain) => ErrorKind::Cycle(self.where_defined(&chain)),
            TemplateError::Other {
                template, message, ..
            } => {
                let message = if template.contains("ansible_local") && message.contains("undefined")
                {
                    format!("{message}; ansible_local holds the local facts (/etc/ansible/facts.d) that a setup task of this build gathered, none before one: a fact another playbook's role gathered, or one counted on a running host's hardware, is a site value (-e ansible_local=... as a mapping)")
                } else {
                    message
                };
                ErrorKind::Template { template, message }
            }
        };
        let kind = match task {
            Some(task) => ErrorKind::InTask {
                task: task.to_owned(),
                inner: Box::new(kind),
            },
            None => kind,
        };
        PlanError::new(at.clone(), kind)
    }
}

/// The field named by serde's "unknown field `x`" message.
pub(super) fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split('`').next()
}

/// The fields listed by serde's "expected one of `a`, `b`" message.
fn known_fields(message: &str) -> Vec<&str> {
    message
        .split_once("expected one of ")
        .map(|(_, list)| list.split(", ").map(|f| f.trim_matches('`')).collect())
        .unwrap_or_default()
}

/// A module's refusal of its arguments, located: an option Ansible takes that imgbuild does not
/// is "not supported yet"; a misspelt one gets a suggestion.
pub(super) fn module_args_error(module: &str, message: &str, at: &Location) -> PlanError {
    let field = unknown_field(message);
    let removed = field.filter(|f| crate::modules::ansible_options::removed(module, f).is_some());
    if let Some(field) = removed {
        // Ansible 2.14 itself refuses it when the task runs: a task that never runs is fine.
        return PlanError::new(
            at.clone(),
            ErrorKind::Module {
                module: module.into(),
                message: format!(
                    "Unsupported parameters for ({module}) module: {field}; {}",
                    crate::modules::not_yet_supported(module, field).unwrap_or_default()
                ),
            },
        );
    }
    if let Some(why) = field.and_then(|f| crate::modules::not_yet_supported(module, f)) {
        let key = format!("{module}: {}", field.unwrap_or_default());
        return PlanError::new(at.clone(), ErrorKind::Unsupported { key, why });
    }
    let hint = field
        .map(|field| crate::error::suggest(field, known_fields(message)))
        .unwrap_or_default();
    PlanError::new(
        at.clone(),
        ErrorKind::Module {
            module: module.into(),
            message: format!("{message}{hint}"),
        },
    )
}
