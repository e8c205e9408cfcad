//! The controller-side modules that steer the run: `meta`, `include_vars` at build time, and
//! facts returned by modules (`service_facts`) merged into `ansible_facts`.

use std::sync::Arc;

use planner::plan::PlannedTask;
use planner::vars::VarValue;
use serde_json::Value as Json;

use super::{Ending, Executor, RoleReport};
use crate::modules::{ModuleError, ModuleResult};
use crate::target::Target;

impl Executor<'_> {
    /// Facts a module returned (`service_facts`) join `ansible_facts` and the top level.
    pub(super) fn merge_facts(&mut self, result: &ModuleResult) {
        let Some(Json::Object(new)) = result.fields.get("ansible_facts") else {
            return;
        };
        let mut facts = match self.plan.facts.get("ansible_facts") {
            Some(Json::Object(known)) => known.clone(),
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
        Ok(ModuleResult::changed(false).with("ansible_facts", Json::Object(vars)))
    }
}
