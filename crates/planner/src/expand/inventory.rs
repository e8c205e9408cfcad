//! `group_by` and `add_host` at plan time: the plan's inventory changes as the build's will,
//! so the tasks after them see `groups` and `group_names` as Ansible's would. When only the
//! build knows whether or how such a task runs, both variables are known only then.

use std::sync::Arc;

use serde_json::Value as Json;

use crate::inventory::{Inventory, PlanInventory};
use crate::modules::inventory::{add_host, GroupByParams};
use crate::plan::PlannedTask;
use crate::planner::Planner;
use crate::vars::VarValue;

use super::Pass;

impl Planner<'_> {
    /// The inventory after `task` (a `group_by` or an `add_host`).
    pub(super) fn plan_inventory(&mut self, task: &PlannedTask, pass: &Pass) {
        let decided_now = task.when.is_none()
            && task.loop_over.is_none()
            && task.deferred.is_empty()
            && task.fails.is_none();
        let host = match self.full(&pass.scope).get("inventory_hostname") {
            Some(VarValue::Raw(Json::String(host))) => Some(host.clone()),
            _ => None,
        };
        let Some(host) = host.filter(|_| decided_now) else {
            self.inventory = PlanInventory::AtBuild;
            return self.inventory_at_build();
        };
        let mut inventory = match std::mem::take(&mut self.inventory) {
            PlanInventory::Untouched => Inventory::new(&host),
            PlanInventory::Known(known) => known,
            PlanInventory::AtBuild => {
                self.inventory = PlanInventory::AtBuild;
                return self.inventory_at_build();
            }
        };
        let applied = match task.module.as_str() {
            "group_by" => serde_json::from_value::<GroupByParams>(task.args.clone())
                .ok()
                .and_then(|p| Some((p.key.clone()?, p.parent_names())))
                .map(|(key, parents)| inventory.group_by(&host, key.as_str(), &parents)),
            _ => add_host(&task.args)
                .ok()
                .map(|added| inventory.add_host(&added.name, &added.groups, &added.vars)),
        };
        if applied.is_none() {
            // A task that fails: the inventory stays as it was.
            self.inventory = PlanInventory::Known(inventory);
            return;
        }
        let (groups, names) = (inventory.groups_var(), inventory.group_names(&host));
        self.inventory = PlanInventory::Known(inventory);
        let layer = Arc::make_mut(&mut self.facts_set);
        layer.insert("groups".into(), VarValue::Raw(groups));
        layer.insert("group_names".into(), VarValue::Raw(names));
    }

    /// `groups` and `group_names` known once the build runs, and from then on.
    fn inventory_at_build(&mut self) {
        let layer = Arc::make_mut(&mut self.facts_set);
        layer.insert("groups".into(), VarValue::Deferred);
        layer.insert("group_names".into(), VarValue::Deferred);
    }
}
