//! Jobs started with `async` and `poll: 0`, and `async_status`. The build runs such a task to
//! its end before the next one starts (a build's tasks share one rootfs and one layer), and
//! registers what Ansible registers when it starts a job; the job's own result is kept for
//! `async_status`, which finds it finished.

use std::sync::Arc;

use planner::vars::VarValue;
use serde_json::{json, Map, Value as Json};

use super::state::Executor;
use crate::modules::{ModuleError, ModuleResult};

/// Where the jobs' results are kept: among the values tasks registered (so that a role whose
/// layer came from the cache brings them back), under a name no template can read or write.
const JOBS: &str = "imgbuild:async-jobs";

impl Executor<'_> {
    /// The jobs started so far: `{"started": n, "jobs": {jid: result}}`.
    fn jobs(&self) -> Map<String, Json> {
        match self.facts_set.get(JOBS) {
            Some(VarValue::Known(Json::Object(jobs)) | VarValue::Raw(Json::Object(jobs))) => {
                jobs.clone()
            }
            _ => Map::new(),
        }
    }

    fn keep_jobs(&mut self, jobs: Map<String, Json>) {
        Arc::make_mut(&mut self.facts_set).insert(JOBS.to_owned(), VarValue::Known(json!(jobs)));
    }

    /// A task started in the background has run: its result is kept as its job's, and what it
    /// registers is what Ansible registers when it starts a job.
    pub(super) fn start_job(&mut self, result: Map<String, Json>) -> Map<String, Json> {
        let mut jobs = self.jobs();
        let count = jobs.get("started").and_then(Json::as_u64).unwrap_or(0) + 1;
        let jid = format!("j{count}.imgbuild");
        let results_file = format!("/root/.ansible_async/{jid}");
        let mut finished = result;
        finished.insert("ansible_job_id".into(), json!(jid));
        finished.insert("started".into(), json!(1));
        finished.insert("finished".into(), json!(1));
        finished.insert("results_file".into(), json!(results_file));
        let entry = jobs
            .entry("jobs")
            .or_insert_with(|| Json::Object(Map::new()));
        if let Json::Object(by_id) = entry {
            by_id.insert(jid.clone(), Json::Object(finished));
        }
        jobs.insert("started".into(), json!(count));
        self.keep_jobs(jobs);
        let mut started = Map::new();
        started.insert("ansible_job_id".into(), json!(jid));
        started.insert("started".into(), json!(1));
        started.insert("finished".into(), json!(0));
        started.insert("results_file".into(), json!(results_file));
        // As Ansible registers a started job: changed, `failed` a number.
        started.insert("changed".into(), json!(true));
        started.insert("failed".into(), json!(0));
        started
    }

    /// `async_status`: the job's result (failing as the job failed), or, with `mode: cleanup`,
    /// the job forgotten.
    pub(super) fn async_status(&mut self, args: &Json) -> Result<ModuleResult, ModuleError> {
        let jid = args.get("jid").map(|j| match j {
            Json::String(s) => s.clone(),
            other => other.to_string(),
        });
        let jid = jid.ok_or_else(|| ModuleError::new("missing required arguments: jid"))?;
        let cleanup = args.get("mode").and_then(Json::as_str) == Some("cleanup");
        let mut jobs = self.jobs();
        let by_id = jobs.get_mut("jobs").and_then(Json::as_object_mut);
        let Some(job) = by_id.as_ref().and_then(|m| m.get(&jid)).cloned() else {
            return Err(ModuleError::new(format!(
                "could not find job (no job '{jid}' was started with async and poll: 0 in this build)"
            )));
        };
        if cleanup {
            if let Some(by_id) = by_id {
                by_id.remove(&jid);
            }
            self.keep_jobs(jobs);
            let erased = format!("/root/.ansible_async/{jid}");
            return Ok(ModuleResult::changed(false)
                .with("ansible_job_id", jid)
                .with("erased", erased)
                .with("started", 0)
                .with("finished", 0)
                .with("stdout", "")
                .with("stderr", "")
                .with("stdout_lines", json!([]))
                .with("stderr_lines", json!([])));
        }
        let Json::Object(mut fields) = job else {
            return Err(ModuleError::new(format!("job '{jid}' has no result")));
        };
        let failed = fields.remove("failed") == Some(json!(true));
        let msg = fields
            .remove("msg")
            .and_then(|m| m.as_str().map(str::to_owned));
        if failed {
            // What the job registered, `changed` among it, stays with the failure.
            return Err(ModuleError {
                msg: msg.unwrap_or_else(|| "the job failed".into()),
                fields,
            });
        }
        let changed = fields.remove("changed") == Some(json!(true));
        Ok(ModuleResult {
            changed,
            msg,
            fields,
            ..ModuleResult::default()
        })
    }
}
