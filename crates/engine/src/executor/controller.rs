//! The modules that run in imgbuild itself rather than in the rootfs: `set_fact`, `debug`,
//! `fail`, `assert`, `meta`, `include_vars` at build time, and facts returned by modules
//! (`service_facts`) merged into `ansible_facts`.

use std::sync::Arc;

use planner::plan::PlannedTask;
use planner::vars::{Scope, VarValue};
use serde_json::Value as Json;

use super::state::{Ending, Executor, RoleReport, TaskFailure};
use crate::modules::{ModuleError, ModuleResult};
use crate::target::Target;

/// `set_fact`'s variable names the plan left to the build (`"{{ item }}": x` over a registered
/// result), rendered now.
pub(super) fn name_facts(
    facts: &mut serde_json::Map<String, Json>,
    templar: &planner::template::Templar,
    scope: &Scope,
) -> Result<(), String> {
    let templated: Vec<String> = facts
        .keys()
        .filter(|k| planner::template::is_template(k))
        .cloned()
        .collect();
    for key in templated {
        let name = match templar.render(&Json::String(key.clone()), scope) {
            Ok(Some(Json::String(name))) => name,
            Ok(Some(other)) => other.to_string(),
            Ok(None) => {
                return Err(format!(
                    "variable name '{key}' uses a result no task registered"
                ))
            }
            Err(e) => return Err(format!("variable name '{key}': {e}")),
        };
        if let Some(value) = facts.remove(&key) {
            facts.insert(name, value);
        }
    }
    Ok(())
}

/// `ping`: `pong`, or `data`; `data: crash` fails as Ansible's module does (it raises).
pub(super) fn ping(args: &Json) -> Result<ModuleResult, ModuleError> {
    let data = args.get("data").and_then(Json::as_str).unwrap_or("pong");
    if data == "crash" {
        return Err(ModuleError::new("boom"));
    }
    Ok(ModuleResult::changed(false).with("ping", data))
}

/// The last `lines` lines of `text` that are not blank.
pub(super) fn tail(text: &str, lines: usize) -> Vec<String> {
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..]
        .iter()
        .map(|l| (*l).to_owned())
        .collect()
}

/// What a module that waits on a running host does in an image build: nothing, said so.
pub(super) fn waits(task: &PlannedTask) -> ModuleResult {
    ModuleResult {
        skipped: true,
        msg: Some(format!(
            "{} skipped: it waits on a running host; an image build has none (the node boots from the image)",
            task.module
        )),
        ..ModuleResult::default()
    }
}

impl Executor<'_> {
    /// `set_fact`: the variables join the set facts; in a lookup's loop, as text never
    /// templated again (Ansible's unsafe values; the plan marked those it rendered).
    pub(super) fn set_fact(
        &mut self,
        task: &PlannedTask,
        args: &Json,
    ) -> Result<ModuleResult, ModuleError> {
        let Json::Object(facts) = args else {
            return Err(ModuleError::new("set_fact needs variables"));
        };
        let from_lookup = task.item.as_ref().is_some_and(|i| i.from_lookup);
        let layer = Arc::make_mut(&mut self.facts_set);
        for (k, v) in facts {
            if k != "cacheable" {
                let mut value = v.clone();
                if from_lookup {
                    planner::template::mark_unsafe(&mut value);
                }
                layer.insert(k.clone(), VarValue::Raw(value));
            }
        }
        Ok(ModuleResult::changed(false).with("ansible_facts", Json::Object(facts.clone())))
    }

    /// A changed task notifies its handlers. A name the plan could not render (it uses a
    /// build-time result) is rendered now, and must name a handler, as Ansible requires. A
    /// name the plan found no handler for fails now, as under Ansible: the plan only warned,
    /// since a task that does not change never looks.
    pub(super) fn notify(&mut self, task: &PlannedTask) -> Result<(), Box<TaskFailure>> {
        for name in &task.notify {
            let name = if planner::template::is_template(name) {
                match self.templar.render_text(name, &self.scope(task, None)) {
                    Ok(Some(rendered)) => {
                        let known = self
                            .plan
                            .handlers
                            .iter()
                            .flat_map(|s| s.tasks())
                            .any(|h| h.name == rendered || h.listen.contains(&rendered));
                        if !known {
                            return Err(self.no_handler(task, &rendered));
                        }
                        rendered
                    }
                    _ => {
                        let msg = format!("notify '{name}' could not be rendered");
                        return Err(Box::new(self.failure(task, msg, &Default::default())));
                    }
                }
            } else if self.plan.missing_handlers.contains(name) {
                return Err(self.no_handler(task, name));
            } else {
                name.clone()
            };
            if !self.notified.contains(&name) {
                self.notified.push(name);
            }
        }
        Ok(())
    }

    /// Ansible's failure for a notified name no handler has.
    fn no_handler(&self, task: &PlannedTask, name: &str) -> Box<TaskFailure> {
        let msg = format!("The requested handler '{name}' was not found in either the main handlers list nor in the listening handlers list");
        Box::new(self.failure(task, msg, &Default::default()))
    }

    /// `debug`: a message, or a variable's value.
    pub(super) fn debug(&self, args: &Json, scope: &Scope) -> Result<ModuleResult, ModuleError> {
        let mut fields = serde_json::Map::new();
        let text = match (args.get("msg"), args.get("var").and_then(Json::as_str)) {
            (_, Some(var)) => {
                // Ansible's debug: an undefined variable prints as such; any other error
                // (a filter that fails) fails the task.
                let value = match self.templar.eval(var, scope) {
                    Ok(value) => value.unwrap_or(Json::Null),
                    Err(planner::template::TemplateError::Undefined { .. }) => {
                        Json::from("VARIABLE IS NOT DEFINED!")
                    }
                    Err(e) => return Err(ModuleError::new(e.to_string())),
                };
                fields.insert(var.to_owned(), value.clone());
                format!(
                    "{var}: {}",
                    serde_json::to_string_pretty(&value).unwrap_or_default()
                )
            }
            (Some(Json::String(s)), None) => s.clone(),
            (Some(other), None) => serde_json::to_string_pretty(other).unwrap_or_default(),
            (None, None) => "Hello world!".into(),
        };
        Ok(ModuleResult {
            msg: Some(text),
            fields,
            ..ModuleResult::default()
        })
    }

    /// `assert`: every condition must hold.
    pub(super) fn assert(
        &self,
        task: &PlannedTask,
        args: &Json,
        scope: &Scope,
    ) -> Result<ModuleResult, ModuleError> {
        let conditions: Vec<Json> = match args.get("that") {
            Some(Json::Array(items)) => items.clone(),
            Some(one) => vec![one.clone()],
            None => Vec::new(),
        };
        for cond in conditions {
            let ok = match &cond {
                Json::Bool(b) => *b,
                Json::String(expr) => self
                    .condition(task, expr, scope)
                    .map_err(ModuleError::new)?,
                other => {
                    return Err(ModuleError::new(format!(
                        "assert: {other} is not a condition"
                    )))
                }
            };
            if !ok {
                let msg = match args.get("fail_msg").or(args.get("msg")) {
                    Some(Json::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => "Assertion failed".to_owned(),
                };
                // What Ansible's assert registers: the condition that failed, and its value.
                let mut error = ModuleError::new(msg);
                error.fields.insert("assertion".into(), cond.clone());
                error
                    .fields
                    .insert("evaluated_to".into(), Json::Bool(false));
                return Err(error);
            }
        }
        let msg = match args.get("success_msg") {
            Some(Json::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => "All assertions passed".to_owned(),
        };
        Ok(ModuleResult {
            msg: Some(msg),
            ..ModuleResult::default()
        })
    }

    /// Facts a module returned (`service_facts`) join `ansible_facts` and the top level.
    pub(super) fn merge_facts(&mut self, result: &ModuleResult) {
        let Some(Json::Object(new)) = result.fields.get("ansible_facts") else {
            return;
        };
        // The plan's facts with those gathered from the image.
        let mut facts = match self.base.get("ansible_facts") {
            Some(VarValue::Raw(Json::Object(known))) => known.clone(),
            _ => serde_json::Map::new(),
        };
        if let Some(VarValue::Raw(Json::Object(set))) = self.facts_set.get("ansible_facts") {
            facts.extend(set.clone());
        }
        let layer = Arc::make_mut(&mut self.facts_set);
        for (k, v) in new {
            facts.insert(k.clone(), v.clone());
            layer.insert(k.clone(), VarValue::Raw(v.clone()));
        }
        layer.insert("ansible_facts".into(), VarValue::Raw(Json::Object(facts)));
    }

    /// `meta`.
    pub(super) fn meta(
        &mut self,
        args: &Json,
        target: &dyn Target,
    ) -> Result<ModuleResult, ModuleError> {
        let action = args.get("cmd").and_then(Json::as_str).unwrap_or("noop");
        match action {
            "flush_handlers" => {
                let mut report = RoleReport::default();
                self.flush_handlers(target, &mut report).map_err(|f| {
                    ModuleError::new(format!("handler '{}' failed: {}", f.task, f.msg))
                })?;
                Ok(ModuleResult {
                    msg: Some(format!("{} handler tasks ran", report.tasks)),
                    ..ModuleResult::default()
                })
            }
            "end_role" => {
                self.ending = Some(Ending::Role);
                Ok(ModuleResult {
                    msg: Some("the rest of the role is skipped".into()),
                    ..ModuleResult::default()
                })
            }
            "end_play" | "end_host" | "end_batch" => {
                self.ending = Some(Ending::Play);
                Ok(ModuleResult {
                    msg: Some("the remaining tasks and roles are skipped; the image is what was built so far".into()),
                    ..ModuleResult::default()
                })
            }
            _ => Ok(ModuleResult::default()),
        }
    }

    /// `include_vars` at build time: the file the plan found, read into the set facts.
    pub(super) fn include_vars(
        &mut self,
        task: &PlannedTask,
        args: &Json,
    ) -> Result<ModuleResult, ModuleError> {
        let files: Vec<String> = match &task.local_file {
            _ if !task.var_files.is_empty() => task.var_files.clone(),
            Some(file) => vec![file.clone()],
            None => {
                let found =
                    self.find_local_source(task, &serde_json::json!({"src": args.get("file")}))?;
                found.into_iter().collect()
            }
        };
        let mut vars = serde_json::Map::new();
        for file in &files {
            let path = self.project_root.join(file);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| ModuleError::new(format!("{file}: {e}")))?;
            let node = planner::yaml::parse(&text)
                .map_err(|e| ModuleError::new(format!("{file}: {e}")))?;
            match node.to_json() {
                Json::Object(map) => vars.extend(map),
                Json::Null => {}
                _ => {
                    return Err(ModuleError::new(format!(
                        "{file} must hold a mapping of variables"
                    )))
                }
            }
        }
        if args.get("hash_behaviour").and_then(Json::as_str) == Some("merge") {
            // Mappings merge into the values the variables have so far, as at plan time.
            for (k, v) in vars.iter_mut() {
                let old = match self.facts_set.get(k).or_else(|| self.base.get(k)) {
                    Some(VarValue::Raw(old)) => old.clone(),
                    _ => continue,
                };
                let mut merged = old;
                planner::vars::merge_hashes(&mut merged, std::mem::take(v));
                *v = merged;
            }
        }
        let layer = Arc::make_mut(&mut self.facts_set);
        match args.get("name").and_then(Json::as_str) {
            Some(name) => {
                layer.insert(name.to_owned(), VarValue::Raw(Json::Object(vars.clone())));
            }
            None => {
                for (k, v) in &vars {
                    layer.insert(k.clone(), VarValue::Raw(v.clone()));
                }
            }
        }
        let included: Vec<String> = files
            .iter()
            .map(|f| self.project_root.join(f).display().to_string())
            .collect();
        Ok(ModuleResult::changed(false)
            .with("ansible_facts", Json::Object(vars))
            .with("ansible_included_var_files", included))
    }
}

/// `fail`: the task fails with its message.
pub(super) fn fail(args: &Json) -> ModuleError {
    let msg = match args.get("msg") {
        Some(Json::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "Failed as requested from task".into(),
    };
    ModuleError::new(msg)
}
