//! `group_by` and `add_host` at build time: the inventory changes as Ansible's strategy
//! changes it from these actions' results, `changed` says whether it did, and `groups` and
//! `group_names` follow for the tasks after.

use std::sync::Arc;

use modules::inventory::{add_host, GroupByParams};
use planner::inventory::Inventory;
use planner::plan::PlannedTask;
use planner::vars::{Scope, VarValue};
use serde_json::{json, Value as Json};

use super::state::Executor;
use crate::modules::{ModuleError, ModuleResult};

impl Executor<'_> {
    /// Runs a `group_by` or an `add_host`.
    pub(super) fn change_inventory(
        &mut self,
        task: &PlannedTask,
        args: &Json,
        scope: &Scope,
    ) -> Result<ModuleResult, ModuleError> {
        let host = match scope.get("inventory_hostname") {
            Some(VarValue::Raw(Json::String(host))) => host.clone(),
            _ => self.plan.image.clone(),
        };
        let inventory = self.inventory.get_or_insert_with(|| Inventory::new(&host));
        let group_by = modules::inventory::GROUP_BY.name;
        let result = if task.module == group_by {
            let p: GroupByParams = crate::modules::params(group_by, args)?;
            let Some(key) = &p.key else {
                // Ansible's words.
                return Err(ModuleError::new(
                    "the 'key' param is required when using group_by",
                ));
            };
            let parents = p.parent_names();
            let changed = inventory.group_by(&host, key.as_str(), &parents);
            let dashed = |name: &str| name.replace(' ', "-");
            let parents: Vec<String> = parents.iter().map(|p| dashed(p)).collect();
            ModuleResult::changed(changed)
                .with("add_group", dashed(key.as_str()))
                .with("parent_groups", json!(parents))
        } else {
            let added = add_host(args).map_err(ModuleError::new)?;
            let changed = inventory.add_host(&added.name, &added.groups, &added.vars);
            ModuleResult::changed(changed).with(
                "add_host",
                json!({"host_name": added.name, "groups": added.groups, "host_vars": added.vars}),
            )
        };
        let (groups, names) = (inventory.groups_var(), inventory.group_names(&host));
        let layer = Arc::make_mut(&mut self.facts_set);
        layer.insert("groups".into(), VarValue::Raw(groups));
        layer.insert("group_names".into(), VarValue::Raw(names));
        Ok(result)
    }
}
