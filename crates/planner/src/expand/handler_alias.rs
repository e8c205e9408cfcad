//! A role's handler notified as `<role> : <handler>`: Ansible matches a notify against a
//! handler's name, then `<role_name> : <name>`, then `<namespace.collection.role> : <name>`
//! (prometheus.prometheus's `_common` role notifies its parent's handlers that way).

use std::ops::Range;

use super::*;
use crate::planner::HandlerAlias;

impl Planner<'_> {
    /// Notes the qualified names of the handlers `steps` of the role whose scope is `scope`.
    pub(super) fn note_handler_aliases(&mut self, scope: &Scope, steps: Range<usize>) {
        let mut roles: Vec<String> = ["role_name", "ansible_role_name"]
            .iter()
            .filter_map(|key| match scope.get(key) {
                Some(VarValue::Raw(Json::String(name))) => Some(name.clone()),
                _ => None,
            })
            .collect();
        roles.dedup();
        let names: Vec<String> = self.handlers[steps.clone()]
            .iter()
            .flat_map(Step::tasks)
            .map(|task| task.name.clone())
            .filter(|name| !name.is_empty())
            .collect();
        for name in names {
            for role in &roles {
                self.handler_aliases.push(HandlerAlias {
                    alias: format!("{role} : {name}"),
                    name: name.clone(),
                    steps: steps.clone(),
                });
            }
        }
    }

    /// A notify that names no handler but a role's handler by its qualified name: that handler
    /// listens to the qualified name too, so the build runs it when notified so.
    pub(crate) fn answer_by_alias(&mut self, notified: &str) {
        if self.handler_names.iter().any(|h| h == notified) {
            return;
        }
        let Some(alias) = self
            .handler_aliases
            .iter()
            .find(|a| a.alias == notified)
            .cloned()
        else {
            return;
        };
        let handler = self.handlers[alias.steps]
            .iter_mut()
            .flat_map(Step::tasks_mut)
            .find(|task| task.name == alias.name);
        if let Some(task) = handler {
            task.listen.push(alias.alias.clone());
            self.handler_names.push(alias.alias);
        }
    }
}
