//! One run of a task: its `when`, its arguments, its attempts until `until` holds, and the
//! verdict of `changed_when`/`failed_when` on what the module returned.

use std::sync::Arc;
use std::time::Duration;

use planner::plan::PlannedTask;
use planner::vars::{Layer, Scope, VarValue};
use serde_json::{json, Map, Value as Json};

use super::state::{Executor, Run};
use crate::events::{Event, Status};
use crate::modules::{self, ModuleError, ModuleResult};
use crate::target::Target;

impl Executor<'_> {
    /// A number keyword (`retries`, `delay`), templated as Ansible templates it.
    fn number(&self, value: &Json, scope: &Scope) -> Option<f64> {
        let value = match value {
            Json::String(_) => self.templar.render(value, scope).ok().flatten()?,
            other => other.clone(),
        };
        match value {
            Json::Number(n) => n.as_f64(),
            Json::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// The task once (one loop item's run): skipped where `when` is false, failed where the plan
    /// left it an error, else its module's attempts.
    pub(super) fn run_once(
        &mut self,
        task: &PlannedTask,
        target: &dyn Target,
        loop_vars: Option<&[(String, Json)]>,
    ) -> Run {
        let scope = self.scope(task, loop_vars);
        if let Some(when) = &task.when {
            match self.condition(task, when, &scope) {
                Ok(true) => {}
                Ok(false) => {
                    return Run {
                        status: Status::Skipped,
                        result: Map::new(),
                        failure: None,
                        msg: Some("condition false".into()),
                    }
                }
                Err(msg) => return self.fail_run(task, msg),
            }
        }
        if let Some(msg) = &task.fails {
            // An error Ansible meets when the task runs, left to the build by the plan.
            return self.fail_run(task, msg.clone());
        }
        if let Some(msg) = &task.unreachable {
            // Delegated to a host no build reaches, with ignore_unreachable: as Ansible
            // registers an unreachable host's task, without failing it.
            let mut result = Map::new();
            result.insert("unreachable".into(), Json::Bool(true));
            result.insert("msg".into(), Json::from(msg.clone()));
            return Run {
                status: Status::Ok,
                result,
                failure: None,
                msg: Some(msg.clone()),
            };
        }
        let args = match self.args(task, &scope) {
            Ok(args) => args,
            Err(msg) => return self.fail_run(task, msg),
        };
        self.attempts(task, &args, target, &scope)
    }

    /// Runs the module once, or, with `until`, until it holds: ansible-core 2.14 runs the task
    /// `retries` (3 unless set) more times after the first, once if `retries` is 0 or less, and
    /// registers `retries` as the attempts of a run that never met `until`.
    fn attempts(
        &mut self,
        task: &PlannedTask,
        args: &Json,
        target: &dyn Target,
        scope: &Scope,
    ) -> Run {
        let attempts = task
            .until
            .as_ref()
            .map(|u| match self.number(&u.retries, scope).unwrap_or(3.0) {
                n if n <= 0.0 => 1,
                n => n as u64 + 1,
            })
            .unwrap_or(1);
        let delay = task
            .until
            .as_ref()
            .and_then(|u| self.number(&u.delay, scope))
            .unwrap_or(5.0)
            .max(0.0);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut outcome = self.run_module(task, args, target, scope);
            if task.until.is_some() {
                // Ansible gives changed_when and failed_when the attempt so far.
                let fields = match &mut outcome {
                    Ok(result) => &mut result.fields,
                    Err(error) => &mut error.fields,
                };
                fields.insert("attempts".into(), json!(attempt));
            }
            let mut run = self.judge(task, outcome, scope);
            if let Some(retry) = &task.until {
                // As ansible-core's TaskExecutor: `until` is asked of every attempt's result,
                // a failed one too (which stays failed when `until` holds).
                let done = self.until_holds(task, &retry.until, &run, scope);
                if !done && attempt < attempts {
                    std::thread::sleep(Duration::from_secs_f64(delay));
                    continue;
                }
                let reported = if done {
                    attempt
                } else {
                    attempt.saturating_sub(1).max(1)
                };
                run.result.insert("attempts".into(), json!(reported));
                if !done {
                    run.result.insert("failed".into(), json!(true));
                }
                // Where failed_when is set, its verdict alone decides, as Ansible's
                // TaskResult.is_failed does, even after `until` ran out.
                if !done && run.failure.is_none() && task.failed_when.is_none() {
                    run.failure = Some(self.failure(
                        task,
                        format!(
                            "'until: {}' still false after {attempt} attempts",
                            retry.until
                        ),
                        &run.result,
                    ));
                }
            }
            return run;
        }
    }

    /// Whether `until` holds after an attempt, with the attempt's result registered under the
    /// task's `register` name; an `until` that cannot be evaluated does not hold.
    fn until_holds(&self, task: &PlannedTask, until: &str, run: &Run, scope: &Scope) -> bool {
        let mut bound = Layer::new();
        if let Some(register) = &task.register {
            // The attempt's result says whether it failed, as Ansible's does by then.
            let mut result = run.result.clone();
            result
                .entry("failed")
                .or_insert(json!(run.failure.is_some()));
            bound.insert(register.clone(), VarValue::Known(Json::Object(result)));
        }
        let until_scope = scope.with_facts_set(Arc::new(
            self.facts_set
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .chain(bound)
                .collect(),
        ));
        self.condition(task, until, &until_scope).unwrap_or(false)
    }

    /// Applies `changed_when` and `failed_when` to a module's outcome.
    fn judge(
        &self,
        task: &PlannedTask,
        outcome: Result<ModuleResult, ModuleError>,
        scope: &Scope,
    ) -> Run {
        let (mut result, mut failure_msg, mut changed, skipped, msg, diff) = match outcome {
            Ok(r) => (r.fields, None, r.changed, r.skipped, r.msg, r.diff),
            Err(e) => {
                let changed = e.fields.get("changed") == Some(&Json::Bool(true));
                (e.fields, Some(e.msg), changed, false, None, None)
            }
        };
        if let Some(msg) = &msg {
            result.insert("msg".into(), json!(msg));
        }
        if skipped {
            return Run {
                status: Status::Skipped,
                result,
                failure: None,
                msg,
            };
        }
        if task.changed_when.is_some() || task.failed_when.is_some() {
            let verdict = Verdict {
                changed,
                failure_msg,
            };
            let verdict = self.conditions(task, scope, &mut result, verdict);
            (changed, failure_msg) = (verdict.changed, verdict.failure_msg);
        }
        if let (Some((path, before, after)), true) = (diff, changed) {
            self.reporter.event(&Event::Diff {
                diff: modules::unified(&path, &before, &after),
            });
        }
        result.insert("changed".into(), json!(changed));
        let failure = failure_msg.map(|m| self.failure(task, m, &result));
        let status = if failure.is_some() {
            Status::Failed
        } else if changed {
            Status::Changed
        } else {
            Status::Ok
        };
        Run {
            status,
            result,
            failure,
            msg,
        }
    }

    /// `changed_when` and `failed_when` on a module's result, registered as Ansible registers
    /// their verdicts (`changed_when_result`, `failed_when_result`).
    fn conditions(
        &self,
        task: &PlannedTask,
        scope: &Scope,
        result: &mut Map<String, Json>,
        mut verdict: Verdict,
    ) -> Verdict {
        let mut bound = Layer::new();
        let mut view = result.clone();
        view.insert("changed".into(), json!(verdict.changed));
        view.insert("failed".into(), json!(verdict.failure_msg.is_some()));
        if let Some(register) = &task.register {
            bound.insert(register.clone(), VarValue::Known(Json::Object(view)));
        }
        let merged: Layer = self
            .facts_set
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .chain(bound)
            .collect();
        let judged = scope.with_facts_set(Arc::new(merged));
        let why = |expr: &str, e: String| {
            format!("The conditional check '{expr}' failed. The error was: {e}")
        };
        if let Some(expr) = &task.changed_when {
            match self.condition(task, expr, &judged) {
                Ok(b) => verdict.changed = b,
                Err(e) => {
                    // Ansible registers why, fails the task, and judges no further.
                    let why = why(expr, e);
                    result.insert("changed_when_result".into(), json!(why));
                    verdict.failure_msg = Some(why);
                    return verdict;
                }
            }
        }
        if let Some(expr) = &task.failed_when {
            // What Ansible registers beside `failed`: the verdict, or why there is none.
            match self.condition(task, expr, &judged) {
                Ok(true) => {
                    result.insert("failed_when_result".into(), json!(true));
                    let msg = verdict.failure_msg.take();
                    verdict.failure_msg =
                        Some(msg.unwrap_or_else(|| format!("failed_when '{expr}' is true")));
                }
                Ok(false) => {
                    result.insert("failed_when_result".into(), json!(false));
                    verdict.failure_msg = None;
                }
                Err(e) => {
                    let why = why(expr, e);
                    result.insert("failed_when_result".into(), json!(why));
                    verdict.failure_msg = Some(why);
                }
            }
        }
        verdict
    }
}

/// Whether a task changed something, and why it failed if it did.
struct Verdict {
    changed: bool,
    failure_msg: Option<String>,
}
