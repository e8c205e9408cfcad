//! The plan-time values a task's build-time expressions need (`PlannedTask::context`).

use indexmap::IndexMap;
use serde_json::{Map, Value as Json};

use crate::modules::PlanTime;
use crate::plan::PlannedTask;
use crate::planner::Planner;
use crate::vars::{Scope, VarValue};

impl Planner<'_> {
    /// The plan-time values of every variable the task's build-time expressions refer to,
    /// following variables whose own values are still templates.
    pub(crate) fn runtime_context(
        &mut self,
        task: &PlannedTask,
        raw_args: &Map<String, Json>,
        scope: &Scope,
    ) -> IndexMap<String, Json> {
        let mut texts = build_time_texts(task, raw_args);
        texts.extend(self.module_texts(task));
        if texts.is_empty() {
            return IndexMap::new();
        }
        let mut queue: Vec<String> = texts
            .iter()
            .flat_map(|(text, expr)| {
                let expr = *expr && !crate::template::is_template(text);
                self.templar.referenced_names(text, expr)
            })
            .collect();
        // `vars` and `hostvars` read variables by names only known as they are read
        // (`hostvars[host]['ansible_connection']`, `vars[item]`): the build gets them all.
        if queue
            .iter()
            .any(|name| name == "vars" || name == "hostvars")
        {
            let full = self.full(scope);
            queue.extend(full.names().into_iter().map(str::to_owned));
        }
        self.values_of(queue, scope)
    }

    /// The texts the build renders for the task's module (`assert`'s conditions, `debug`'s
    /// `var`, a template the plan could not render), each with whether it is an expression.
    fn module_texts(&mut self, task: &PlannedTask) -> Vec<(String, bool)> {
        let mut texts = Vec::new();
        let Some(spec) = crate::modules::lookup(&task.module) else {
            return texts;
        };
        for arg in spec.build_expressions {
            match task.args.get(*arg) {
                Some(Json::Array(items)) => texts.extend(
                    items
                        .iter()
                        .filter_map(Json::as_str)
                        .map(|s| (s.to_owned(), true)),
                ),
                Some(Json::String(s)) => texts.push((s.clone(), true)),
                _ => {}
            }
        }
        // A template the plan could not render: the build renders the whole file.
        if spec.plan_time == PlanTime::RenderTemplate && task.rendered.is_none() {
            let file = task.local_file.as_ref().map(std::path::Path::new);
            if let Some(text) = file.and_then(|f| self.sources.read_text(f).ok()) {
                // (already an input of the image: the plan named it)
                texts.push((text, false));
            }
        }
        texts
    }

    /// The plan-time value of each name in `queue` (rendered, or kept raw with the names it
    /// uses when only the build can render it), sorted by name.
    fn values_of(&self, mut queue: Vec<String>, scope: &Scope) -> IndexMap<String, Json> {
        let full = self.full(scope);
        let mut context = IndexMap::new();
        while let Some(name) = queue.pop() {
            if context.contains_key(&name) {
                continue;
            }
            let raw = match full.get(&name) {
                Some(VarValue::Raw(raw)) => raw,
                // A value used as it is (a lookup loop's item): the build templates the context
                // again, so its text is kept as text.
                Some(VarValue::Known(value)) => {
                    let mut value = value.clone();
                    crate::template::mark_unsafe(&mut value);
                    context.insert(name, value);
                    continue;
                }
                _ => continue,
            };
            match self.templar.render(raw, &full) {
                // A value whose text looks like a template (an `!unsafe` one, a `{% raw %}`
                // block's) would be templated again by the build: that keeps the raw value.
                Ok(Some(value)) if !crate::template::contains_template(&value) => {
                    context.insert(name, value);
                }
                _ => {
                    // Still a template (it uses build-time results): keep it and what it uses.
                    let mut nested = Vec::new();
                    strings(raw, &mut nested);
                    for (text, _) in nested {
                        queue.extend(self.templar.referenced_names(&text, false));
                    }
                    context.insert(name, raw.clone());
                }
            }
        }
        context.sort_keys();
        context
    }
}

/// The texts the build renders for any task: its deferred arguments, its conditions, its
/// `until` and its loop, each with whether it is an expression.
fn build_time_texts(task: &PlannedTask, raw_args: &Map<String, Json>) -> Vec<(String, bool)> {
    let mut texts = Vec::new();
    for key in &task.deferred {
        if let Some(raw) = raw_args.get(key) {
            strings(raw, &mut texts);
        }
    }
    for expr in [&task.when, &task.changed_when, &task.failed_when]
        .into_iter()
        .flatten()
    {
        texts.push((expr.clone(), true));
    }
    if let Some(retry) = &task.until {
        texts.push((retry.until.clone(), true));
    }
    if let Some(over) = &task.loop_over {
        strings(over, &mut texts);
    }
    texts
}

/// Every string inside `value`, as text (not an expression).
fn strings(value: &Json, out: &mut Vec<(String, bool)>) {
    match value {
        Json::String(s) => out.push((s.clone(), false)),
        Json::Array(items) => items.iter().for_each(|i| strings(i, out)),
        Json::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}
