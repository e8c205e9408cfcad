//! Loops: one the build resolves (`loop_over`), and what a loop the plan unrolled registers.

use planner::plan::PlannedTask;
use planner::vars::{Layer, VarValue};
use serde_json::{json, Map, Value as Json};

use super::state::{Executor, Run};
use crate::events::Status;
use crate::target::Target;

/// The variables of one iteration as a layer; a lookup's item is unsafe, as Ansible's: used as
/// it is, never templated again.
pub(super) fn item_layer(task: &PlannedTask, vars: &[(String, Json)]) -> Layer {
    let unsafe_var = task.item.as_ref().filter(|i| i.from_lookup).map(|i| &i.var);
    vars.iter()
        .map(|(k, v)| match unsafe_var == Some(k) {
            true => (k.clone(), VarValue::Known(v.clone())),
            false => (k.clone(), VarValue::Raw(v.clone())),
        })
        .collect()
}

impl Executor<'_> {
    /// What a loop the plan unrolled registers after this item: one result per item so far
    /// under `results`, as Ansible registers a loop (skipped items included).
    pub(super) fn planned_loop_result(
        &mut self,
        task: &PlannedTask,
        item: &planner::plan::LoopItem,
        result: &Map<String, Json>,
    ) -> Json {
        let mut one = result.clone();
        one.insert(item.var.clone(), item.value.clone());
        one.insert("ansible_loop_var".into(), json!(item.var));
        if let Some(index_var) = &item.index_var {
            one.insert(index_var.clone(), json!(item.index));
            one.insert("ansible_index_var".into(), json!(index_var));
        }
        if item.index == 0 || self.loop_results.0 != task.source {
            self.loop_results = (task.source.clone(), Vec::new());
        }
        self.loop_results.1.push(Json::Object(one));
        Json::Object(loop_summary(&self.loop_results.1))
    }

    pub(super) fn run_loop(&mut self, task: &PlannedTask, target: &dyn Target, over: &Json) -> Run {
        let scope = self.scope(task, None);
        let items = match self.templar.render(over, &scope) {
            Ok(Some(Json::Array(items))) => items,
            Ok(Some(other)) => {
                return self.fail_run(task, format!("loop gave {other}, not a list"))
            }
            Ok(None) => {
                return self.fail_run(task, "the loop still uses results no task registered")
            }
            Err(e) => return self.fail_run(task, format!("loop: {e}")),
        };
        let var = task.loop_var.clone().unwrap_or_else(|| "item".into());
        let mut results = Vec::new();
        let (mut changed, mut all_skipped) = (false, true);
        let mut first_failure = None;
        for (index, item) in items.iter().enumerate() {
            pause_before(task, index);
            let vars = planner::plan::loop_vars(
                &var,
                task.loop_index_var.as_deref(),
                &items,
                index,
                task.loop_extended,
            );
            let run = self.run_once(task, target, Some(&vars));
            changed |= run.status == Status::Changed;
            all_skipped &= run.status == Status::Skipped;
            let mut result = run.result;
            for (key, value) in vars
                .into_iter()
                .skip(1)
                .filter(|(k, _)| k != "ansible_loop")
            {
                result.insert(key, value);
            }
            result.insert(var.clone(), item.clone());
            result.insert("changed".into(), json!(run.status == Status::Changed));
            result.insert("failed".into(), json!(run.failure.is_some()));
            if run.status == Status::Skipped {
                result.insert("skipped".into(), json!(true));
                result.insert("skip_reason".into(), json!("Conditional result was False"));
            }
            results.push(Json::Object(result));
            // Ansible runs every item; the task fails after them if one did.
            first_failure = first_failure.or(run.failure);
        }
        let mut map = loop_summary(&results);
        if let Some(mut failure) = first_failure {
            map.insert("msg".into(), json!("One or more items failed"));
            failure.msg = format!("One or more items failed; the first: {}", failure.msg);
            return Run {
                status: Status::Failed,
                result: map,
                failure: Some(failure),
                msg: None,
            };
        }
        let status = if changed {
            Status::Changed
        } else if all_skipped && !items.is_empty() {
            Status::Skipped
        } else {
            Status::Ok
        };
        Run {
            status,
            result: map,
            failure: None,
            msg: None,
        }
    }
}

/// `loop_control.pause`: Ansible waits before each item but the first.
pub(super) fn pause_before(task: &PlannedTask, index: usize) {
    if let Some(pause) = task.loop_pause.filter(|_| index > 0) {
        std::thread::sleep(std::time::Duration::from_secs_f64(pause));
    }
}

/// What a loop registers: its items' results, `changed` and `failed` if any item was, and
/// `skipped` if every item was.
fn loop_summary(results: &[Json]) -> Map<String, Json> {
    let any = |key: &str| results.iter().any(|r| r[key] == Json::Bool(true));
    let all_skipped = !results.is_empty() && results.iter().all(|r| r["skipped"] == json!(true));
    let mut map = Map::new();
    map.insert("results".into(), Json::Array(results.to_vec()));
    map.insert("changed".into(), json!(any("changed")));
    map.insert(
        "msg".into(),
        json!(if all_skipped {
            "All items skipped"
        } else {
            "All items completed"
        }),
    );
    if any("failed") {
        map.insert("failed".into(), json!(true));
    }
    if all_skipped {
        map.insert("skipped".into(), json!(true));
    }
    map
}
