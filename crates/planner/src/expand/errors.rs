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
