//! Runs a plan's tasks against a target: `when` at build time, loops, `register`, blocks with
//! `rescue`/`always`, `ignore_errors`, `changed_when`/`failed_when`, `until`/`retries`, task
//! environment, handlers flushed at the end of each role, check and diff mode.

mod async_jobs;
mod attempts;
mod controller;
mod controller_folder;
mod image_facts;
mod initramfs_steps;
mod inventory;
mod local_facts;
mod loops;
mod state;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use planner::plan::{PlannedTask, Step};
use planner::template::{Condition, PythonPlugins, Templar, TemplateError, OMIT};
use planner::vars::{Layer, Scope, VarValue};
use planner::Plan;
use serde_json::{json, Map, Value as Json};

use crate::events::{Event, Reporter, Status};
use crate::modules::{self, Downloader, ModuleCtx, ModuleError, ModuleResult};
use crate::target::Target;
pub(crate) use state::Ending;
use state::Run;
pub use state::{ExecOptions, Executor, RoleReport, TaskFailure};

/// The result a task registers, taken from its run: Ansible's `changed`, `failed`, `skipped`
/// and, for a failure, why (`msg`, and `message` for include_vars).
fn registered_result(
    task: &PlannedTask,
    mut result: Map<String, Json>,
    failure: Option<&TaskFailure>,
    status: Status,
) -> Map<String, Json> {
    if let Some(failure) = failure {
        // What Ansible registers for a failed task says why.
        result
            .entry("msg")
            .or_insert_with(|| Json::from(failure.msg.clone()));
        if task.module == modules::include_vars::SPEC.name {
            // Ansible's include_vars says why under `message`.
            result.insert("message".into(), Json::from(failure.msg.clone()));
        }
    }
    // A failed task keeps the `changed` its changed_when gave it.
    let changed = status == Status::Changed
        || (failure.is_some() && result.get("changed") == Some(&json!(true)));
    result.insert("changed".into(), json!(changed));
    result.insert("failed".into(), json!(failure.is_some()));
    if status == Status::Skipped {
        result.insert("skipped".into(), json!(true));
    }
    if status == Status::Skipped && task.loop_over.is_none() {
        result.insert("skip_reason".into(), json!("Conditional result was False"));
    }
    result
}

fn step_role(step: &Step) -> &str {
    match step {
        Step::Task(t) => &t.role,
        Step::Block(b) => &b.role,
    }
}

impl<'a> Executor<'a> {
    /// An executor for `plan`; `project_root` holds the role files tasks read.
    pub fn new(
        plan: &'a Plan,
        project_root: &'a Path,
        downloads: &'a dyn Downloader,
        reporter: &'a dyn Reporter,
        options: ExecOptions,
    ) -> Self {
        let mut base = Layer::new();
        for (k, v) in plan.facts.iter().chain(&plan.vars) {
            base.insert(k.clone(), VarValue::Raw(v.clone()));
        }
        // `ansible_facts`: the plan's facts without their prefix; the image's own facts join
        // it when the first role runs (image_facts.rs), local facts when `setup` reads them.
        let facts: Map<String, Json> = plan
            .facts
            .iter()
            .filter(|(k, _)| k.as_str() != "ansible_local")
            .filter_map(|(k, v)| Some((k.strip_prefix("ansible_")?.to_owned(), v.clone())))
            .collect();
        base.insert("ansible_facts".into(), VarValue::Raw(Json::Object(facts)));
        base.insert(
            "ansible_check_mode".into(),
            VarValue::Raw(Json::Bool(options.check)),
        );
        base.insert(
            "ansible_diff_mode".into(),
            VarValue::Raw(Json::Bool(options.diff)),
        );
        let pkg_mgr = plan
            .facts
            .get("ansible_pkg_mgr")
            .and_then(Json::as_str)
            .unwrap_or("apt")
            .to_owned();
        // The project's Python plugins, as planning had them (a project whose
        // plugins do not load never got a plan).
        let plain = Templar::new();
        let templar = match PythonPlugins::for_project(project_root, &plain) {
            Ok(Some(plugins)) => plain.with_python_plugins(&plugins),
            _ => plain,
        };
        Self {
            plan,
            templar,
            base: Arc::new(base),
            facts_set: Arc::new(Layer::new()),
            reporter,
            options,
            project_root,
            downloads,
            pkg_mgr,
            notified: Vec::new(),
            loop_results: (String::new(), Vec::new()),
            ending: None,
            image_facts_gathered: false,
            inventory: None,
            controller: None,
            initramfs: Default::default(),
        }
    }

    /// What tasks registered and set so far (to store with a cached layer).
    pub fn registered(&self) -> Json {
        Json::Object(
            self.facts_set
                .iter()
                .filter_map(|(k, v)| match v {
                    VarValue::Raw(raw) | VarValue::Known(raw) => Some((k.clone(), raw.clone())),
                    VarValue::Deferred | VarValue::Open(_) => None,
                })
                .collect(),
        )
    }

    /// Restores what a cached role registered, so later roles see it.
    pub fn restore_registered(&mut self, registered: &Json) {
        if let Json::Object(map) = registered {
            let layer = Arc::make_mut(&mut self.facts_set);
            for (k, v) in map {
                layer.insert(k.clone(), VarValue::Raw(v.clone()));
            }
        }
    }

    /// Runs every task of `role` and then the handlers it notified.
    pub fn run_role(
        &mut self,
        role: &str,
        target: &dyn Target,
    ) -> Result<RoleReport, Box<TaskFailure>> {
        let started = Instant::now();
        self.gather_image_facts(target);
        self.reporter.event(&Event::RoleStart {
            role: role.to_owned(),
        });
        let steps: Vec<Step> = self
            .plan
            .tasks
            .iter()
            .filter(|s| step_role(s) == role)
            .cloned()
            .collect();
        let mut report = RoleReport::default();
        self.initramfs_begin_role(target);
        let outcome = if self.ending == Some(Ending::Play) {
            Ok(())
        } else {
            self.run_steps(&steps, target, &mut report)
        };
        if self.ending == Some(Ending::Role) {
            self.ending = None;
        }
        // Handlers run at the end of the role, even when a later task failed (as --force-handlers would not:
        // Ansible skips them on failure, and so does imgbuild).
        let outcome = outcome
            .and_then(|()| self.flush_handlers(target, &mut report))
            .and_then(|()| self.initramfs_at_end(role, target, &mut report));
        self.reporter.event(&Event::RoleEnd {
            role: role.to_owned(),
            tasks: report.tasks,
            changed: report.changed,
            seconds: started.elapsed().as_secs_f64(),
        });
        outcome.map(|()| report)
    }

    fn flush_handlers(
        &mut self,
        target: &dyn Target,
        report: &mut RoleReport,
    ) -> Result<(), Box<TaskFailure>> {
        if self.notified.is_empty() {
            return Ok(());
        }
        let notified = std::mem::take(&mut self.notified);
        let handlers: Vec<Step> = self.plan.handlers.clone();
        for step in &handlers {
            let wanted = step.tasks().iter().any(|h| {
                notified.contains(&h.name) || h.listen.iter().any(|l| notified.contains(l))
            });
            if wanted {
                self.run_steps(std::slice::from_ref(step), target, report)?;
            }
        }
        Ok(())
    }

    fn run_steps(
        &mut self,
        steps: &[Step],
        target: &dyn Target,
        report: &mut RoleReport,
    ) -> Result<(), Box<TaskFailure>> {
        for step in steps {
            if self.ending.is_some() {
                break;
            }
            match step {
                Step::Task(task) => self.run_task(task, target, report)?,
                Step::Block(block) => {
                    let mut outcome = self.run_steps(&block.block, target, report);
                    if let Err(failure) = &outcome {
                        if !block.rescue.is_empty() {
                            let failed =
                                json!({"name": failure.task, "source": failure.source_line});
                            let failed_result =
                                json!({"failed": true, "msg": failure.msg, "rc": failure.rc});
                            let layer = Arc::make_mut(&mut self.facts_set);
                            layer.insert("ansible_failed_task".into(), VarValue::Raw(failed));
                            layer.insert(
                                "ansible_failed_result".into(),
                                VarValue::Raw(failed_result),
                            );
                            outcome = self.run_steps(&block.rescue, target, report);
                        }
                    }
                    let always = self.run_steps(&block.always, target, report);
                    outcome.and(always)?;
                }
            }
        }
        Ok(())
    }

    /// Variables for a task at build time: facts and recipe vars, the task's plan-time context,
    /// the loop variables of this iteration, and what earlier tasks registered.
    fn scope(&self, task: &PlannedTask, loop_vars: Option<&[(String, Json)]>) -> Scope {
        let mut context = Layer::new();
        for (k, v) in &task.context {
            context.insert(k.clone(), VarValue::Raw(v.clone()));
        }
        let mut scope = Scope::default()
            .with_layer(self.base.clone())
            .with_layer(Arc::new(context));
        let planned;
        let loop_vars = match (loop_vars, &task.item) {
            (Some(vars), _) => Some(vars),
            (None, Some(item)) => {
                let mut vars = vec![
                    (item.var.clone(), item.value.clone()),
                    ("ansible_loop_var".to_owned(), json!(item.var)),
                ];
                if let Some(index_var) = &item.index_var {
                    vars.push((index_var.clone(), json!(item.index)));
                    vars.push(("ansible_index_var".to_owned(), json!(index_var)));
                }
                if let Some(extended) = &item.extended {
                    vars.push(("ansible_loop".to_owned(), extended.clone()));
                }
                planned = vars;
                Some(planned.as_slice())
            }
            (None, None) => None,
        };
        if let Some(vars) = loop_vars {
            scope = scope.with_layer(Arc::new(loops::item_layer(task, vars)));
        }
        scope.with_facts_set(self.facts_with_resolved_context(task))
    }

    /// What tasks set so far, under the values the plan resolved for this task: a value the
    /// plan knew already holds what the build set before it (an `include_vars` the build
    /// repeats as raw templates must not hide it).
    fn facts_with_resolved_context(&self, task: &PlannedTask) -> Arc<Layer> {
        let resolved: Vec<(&String, &Json)> = task
            .context
            .iter()
            .filter(|(k, v)| {
                self.facts_set.contains_key(*k) && !planner::template::contains_template(v)
            })
            .collect();
        if resolved.is_empty() {
            return self.facts_set.clone();
        }
        let mut layer = (*self.facts_set).clone();
        for (k, v) in resolved {
            layer.insert(k.clone(), VarValue::Raw(v.clone()));
        }
        Arc::new(layer)
    }

    fn failure(
        &self,
        task: &PlannedTask,
        msg: impl Into<String>,
        result: &Map<String, Json>,
    ) -> TaskFailure {
        let mut output = [result.get("stderr"), result.get("stdout")]
            .into_iter()
            .flatten()
            .filter_map(Json::as_str)
            .collect::<Vec<_>>()
            .join("\n");
        if let Some(Json::String(assertion)) = result.get("assertion") {
            // Which of an assert's conditions failed, as Ansible reports it.
            output = format!("assertion: {assertion} (evaluated to false)");
        }
        TaskFailure {
            role: task.role.clone(),
            task: task.name.clone(),
            source_line: task.source.clone(),
            module: task.module.clone(),
            command: match result.get("cmd") {
                Some(Json::String(cmd)) => Some(cmd.clone()),
                Some(Json::Array(argv)) => Some(
                    argv.iter()
                        .map(|a| {
                            a.as_str()
                                .map(str::to_owned)
                                .unwrap_or_else(|| a.to_string())
                        })
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => None,
            },
            rc: result.get("rc").and_then(Json::as_i64),
            msg: msg.into(),
            output_tail: if task.no_log {
                vec!["(output hidden by no_log)".into()]
            } else {
                controller::tail(&output, 20)
            },
        }
    }

    fn run_task(
        &mut self,
        task: &PlannedTask,
        target: &dyn Target,
        report: &mut RoleReport,
    ) -> Result<(), Box<TaskFailure>> {
        let started = Instant::now();
        let dpkg_log = crate::costs::DpkgLogMark::take(target);
        self.reporter.event(&Event::TaskStart {
            role: task.role.clone(),
            task: task.name.clone(),
            source: task.source.clone(),
        });
        if let Some(item) = &task.item {
            loops::pause_before(task, item.index);
        }
        let run = match &task.loop_over {
            None => self.run_once(task, target, None),
            Some(over) => self.run_loop(task, target, over),
        };
        let ignored = run.failure.is_some()
            && task
                .ignore_errors
                .as_ref()
                .is_some_and(|v| self.truthy(task, v));
        self.initramfs_after_task(task, target);
        let mut result = registered_result(task, run.result, run.failure.as_ref(), run.status);
        // A job started in the background: its failure is its result's, which async_status
        // reports; the task that started it succeeds, as under Ansible.
        let (run_failure, run_status) = match task.background && run.status != Status::Skipped {
            true => {
                result = self.start_job(result);
                (None, Status::Changed)
            }
            false => (run.failure, run.status),
        };
        let ignored = ignored && run_failure.is_some();
        if let Some(register) = &task.register {
            let registered = match &task.item {
                Some(item) => self.planned_loop_result(task, item, &result),
                None => Json::Object(result.clone()),
            };
            Arc::make_mut(&mut self.facts_set)
                .insert(register.clone(), VarValue::Known(registered));
        }
        if run_status != Status::Skipped {
            report.tasks += 1;
        }
        if run_status == Status::Changed {
            report.changed += 1;
            self.notify(task)?;
        }
        let msg = run_failure.as_ref().map(|f| f.msg.clone()).or(run.msg);
        let seconds = started.elapsed().as_secs_f64();
        if run_status != Status::Skipped {
            report.costs.push(crate::costs::TaskCost {
                task: task.name.clone(),
                source: task.source.clone(),
                seconds,
                packages: dpkg_log.phases(target, seconds),
            });
        }
        self.reporter.event(&Event::TaskEnd {
            role: task.role.clone(),
            task: task.name.clone(),
            source: task.source.clone(),
            status: if run_failure.is_some() {
                Status::Failed
            } else {
                run_status
            },
            seconds,
            msg,
            ignored,
        });
        match run_failure {
            Some(failure) if !ignored => Err(Box::new(failure)),
            _ => Ok(()),
        }
    }

    fn truthy(&self, task: &PlannedTask, value: &Json) -> bool {
        match value {
            Json::Bool(b) => *b,
            Json::String(expr) => matches!(
                self.templar.condition(expr, &self.scope(task, None)),
                Ok(Condition::Known(true))
            ),
            _ => false,
        }
    }

    fn fail_run(&self, task: &PlannedTask, msg: impl Into<String>) -> Run {
        let result = Map::new();
        Run {
            status: Status::Failed,
            failure: Some(self.failure(task, msg, &result)),
            result,
            msg: None,
        }
    }

    fn condition(&self, task: &PlannedTask, expr: &str, scope: &Scope) -> Result<bool, String> {
        match self.templar.condition(expr, scope) {
            Ok(Condition::Known(b)) => Ok(b),
            Ok(Condition::Deferred) => Err(format!("'{expr}' uses a result no task registered")),
            // ansible-core 2.14 takes Jinja2's truth of a value that is not a boolean.
            Ok(Condition::NotBoolean(_, truth)) => Ok(truth),
            Err(e) => Err(format!("{} in '{expr}' ({})", e, task.source)),
        }
    }

    /// The user the task becomes: the plan's, or, when only the build knows it, its template
    /// rendered now (for this item); root or empty is no one.
    fn become_user(
        &self,
        task: &PlannedTask,
        scope: &Scope,
    ) -> Result<Option<String>, ModuleError> {
        let Some(user) = &task.become_user else {
            return Ok(None);
        };
        if !task.become_user_at_build {
            return Ok(Some(user.clone()));
        }
        let rendered = self
            .templar
            .render(&Json::String(user.clone()), scope)
            .map_err(|e| ModuleError::new(format!("become_user: {e}")))?
            .ok_or_else(|| ModuleError::new("become_user uses a result no task registered"))?;
        let user = match rendered {
            Json::String(s) => s,
            Json::Null => String::new(),
            other => other.to_string(),
        };
        Ok((!user.is_empty() && user != "root").then_some(user))
    }

    /// The task's arguments with the deferred ones rendered now.
    fn args(&self, task: &PlannedTask, scope: &Scope) -> Result<Json, String> {
        let mut args = task.args.clone();
        let Json::Object(map) = &mut args else {
            return Ok(args);
        };
        for key in &task.deferred {
            let Some(raw) = map.get(key).cloned() else {
                continue;
            };
            match self.templar.render(&raw, scope) {
                Ok(Some(Json::String(s))) if s == OMIT => {
                    map.remove(key);
                }
                Ok(Some(value)) => {
                    map.insert(key.clone(), modules::templated_argument(key, value));
                }
                Ok(None) => {
                    return Err(format!("argument '{key}' uses a result no task registered"))
                }
                Err(TemplateError::Undefined { name, .. }) => {
                    return Err(format!(
                        "The task includes an option with an undefined variable. The error was: \
                         '{name}' is undefined (argument '{key}')"
                    ))
                }
                Err(e) => {
                    return Err(e
                        .lookup_failure()
                        .unwrap_or_else(|| format!("argument '{key}': {e}")))
                }
            }
        }
        if task.deferred.is_empty() {
            return Ok(args);
        }
        if task.module == modules::set_fact::SPEC.name {
            controller::name_facts(map, &self.templar, scope)?;
        }
        let spec = match task.module.as_str() {
            modules::role_module::MODULE => &modules::role_module::SPEC,
            name => modules::lookup(name).ok_or_else(|| format!("unknown module {name}"))?,
        };
        (spec.normalize)(args)
    }

    /// The project file of a template or copy whose `src` only the build knows, looked for in
    /// the folders the plan lists.
    fn find_local_source(
        &self,
        task: &PlannedTask,
        args: &Json,
    ) -> Result<Option<String>, ModuleError> {
        if task.local_file.is_some() || task.local_search.is_empty() {
            return Ok(None);
        }
        let Some(src) = modules::local_source(&task.module, args) else {
            return Ok(None);
        };
        if src.starts_with('/') || src.split('/').any(|p| p == "..") {
            return Err(ModuleError::new(format!(
                "src '{src}' must name a file inside the role (relative, no '..')"
            )));
        }
        task.local_search
            .iter()
            .map(|dir| format!("{dir}/{src}"))
            .find(|candidate| self.project_root.join(candidate).exists())
            .map(Some)
            .ok_or_else(|| {
                ModuleError::new(format!(
                    "{} '{src}' not found (looked in {})",
                    task.module,
                    task.local_search.join(", ")
                ))
            })
    }

    /// Runs a task's module: imgbuild's own (controller modules) here, any other in the target.
    fn run_module(
        &mut self,
        task: &PlannedTask,
        args: &Json,
        target: &dyn Target,
        scope: &Scope,
    ) -> Result<ModuleResult, ModuleError> {
        let module = task.module.as_str();
        match CONTROLLER_MODULES.iter().find(|(name, _)| *name == module) {
            Some((_, run)) => run(
                self,
                &ControllerCall {
                    task,
                    args,
                    target,
                    scope,
                },
            ),
            None => self.run_target_module(task, args, target, scope),
        }
    }

    /// A template the plan left to the build (it uses a registered result), rendered now with
    /// the template variables of its file.
    fn render_template_now(
        &self,
        file: &str,
        args: &Json,
        scope: &Scope,
    ) -> Result<String, ModuleError> {
        let text = std::fs::read_to_string(self.project_root.join(file))
            .map_err(|e| ModuleError::new(format!("{file}: {e}")))?;
        let options = modules::template::file_options(args);
        let arg = |name: &str| args.get(name).and_then(Json::as_str);
        let vars = planner::template::template_vars(
            arg("src").unwrap_or(file),
            &self.project_root.join(file),
            arg("dest"),
        );
        self.templar
            .render_file(&text, &scope.with_layer(vars), options)
            .map_err(|e| ModuleError::new(format!("{file}: {e}")))?
            .ok_or_else(|| ModuleError::new(format!("{file} uses a result no task registered")))
    }

    /// Runs a module in the target (or the controller folder, for a task delegated to
    /// `localhost`), with the task's project file, rendered template and environment.
    fn run_target_module(
        &mut self,
        task: &PlannedTask,
        args: &Json,
        target: &dyn Target,
        scope: &Scope,
    ) -> Result<ModuleResult, ModuleError> {
        let module = task.module.as_str();
        let found_now = self.find_local_source(task, args)?;
        let local_file = task.local_file.as_ref().or(found_now.as_ref());
        let rendered_now;
        let is_template = module == modules::template::SPEC.name;
        let rendered = match (&task.rendered, is_template, local_file) {
            (Some(text), _, _) => Some(text.as_str()),
            (None, true, Some(file)) => {
                rendered_now = self.render_template_now(file, args, scope)?;
                Some(rendered_now.as_str())
            }
            _ => None,
        };
        let env: Vec<(String, String)> = task
            .environment
            .iter()
            .map(|(k, v)| {
                // Python's str() of the value, as Ansible exports it (`True`).
                (
                    k.clone(),
                    v.as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| planner::pyjson::repr(v)),
                )
            })
            .collect();
        if task.on_controller && self.controller.is_none() {
            self.controller = Some(controller_folder::ControllerFolder::new()?);
        }
        let controller = self.controller.as_ref().map(|c| c.target());
        let target: &dyn Target = match controller.filter(|_| task.on_controller) {
            Some(folder) => folder,
            None => target,
        };
        let user = self.become_user(task, scope)?;
        let became = match task.on_controller {
            true => None,
            false => crate::become_target::for_task(target, user.as_deref())?,
        };
        let ctx = ModuleCtx {
            target: became.as_ref().map_or(target, |b| b as &dyn Target),
            controller: controller.map(|c| c.fs()),
            check: task.check_mode.unwrap_or(self.options.check),
            diff: task.diff.unwrap_or(self.options.diff),
            project_root: self.project_root,
            local_file: local_file.map(String::as_str),
            rendered,
            env: &env,
            pkg_mgr: &self.pkg_mgr,
            downloads: self.downloads,
        };
        let result = modules::run(module, args, &ctx).unwrap_or_else(|| {
            Err(ModuleError::new(format!(
                "module {module} cannot run in an image build"
            )))
        })?;
        self.merge_facts(&result);
        Ok(result)
    }
}

/// What a controller module is given: its task, its resolved arguments, the target and the
/// task's variables.
struct ControllerCall<'c> {
    task: &'c PlannedTask,
    args: &'c Json,
    target: &'c dyn Target,
    scope: &'c Scope,
}

/// A controller module's implementation: it acts on the executor (facts, inventory, ...).
type RunController =
    for<'p> fn(&mut Executor<'p>, &ControllerCall) -> Result<ModuleResult, ModuleError>;

/// Each module imgbuild runs itself instead of in the rootfs (`name: controller` in the
/// planner's registry), at the path of its spec in `planner::modules`: `host_only::PAUSE`
/// runs `pause`. [`CONTROLLER_MODULES`] is made from the registry, so a registered controller
/// module without its implementation here does not compile.
mod controller_modules {
    use crate::executor::{controller, RunController};

    pub mod set_fact {
        use super::*;
        pub const SPEC: RunController = |ex, call| ex.set_fact(call.task, call.args);
    }
    pub mod debug {
        use super::*;
        pub const SPEC: RunController = |ex, call| ex.debug(call.args, call.scope);
    }
    pub mod fail {
        use super::*;
        pub const SPEC: RunController = |_, call| Err(controller::fail(call.args));
    }
    pub mod ping {
        use super::*;
        pub const SPEC: RunController = |_, call| controller::ping(call.args);
    }
    pub mod async_status {
        use super::*;
        pub const SPEC: RunController = |ex, call| ex.async_status(call.args);
    }
    pub mod assert {
        use super::*;
        pub const SPEC: RunController = |ex, call| ex.assert(call.task, call.args, call.scope);
    }
    pub mod meta {
        use super::*;
        pub const SPEC: RunController = |ex, call| ex.meta(call.args, call.target);
    }
    pub mod include_vars {
        use super::*;
        pub const SPEC: RunController = |ex, call| ex.include_vars(call.task, call.args);
    }
    pub mod host_only {
        use super::*;
        /// Skipped with a note: the node boots from the image, nothing waits in a build.
        const WAITS: RunController = |_, call| Ok(controller::waits(call.task));
        pub const PAUSE: RunController = WAITS;
        pub const REBOOT: RunController = WAITS;
        pub const WAIT_FOR: RunController = WAITS;
        pub const WAIT_FOR_CONNECTION: RunController = WAITS;
        pub const SETUP: RunController = |ex, call| ex.setup(call.args, call.target);
    }
    pub mod inventory {
        use super::*;
        const CHANGE: RunController =
            |ex, call| ex.change_inventory(call.task, call.args, call.scope);
        pub const GROUP_BY: RunController = CHANGE;
        pub const ADD_HOST: RunController = CHANGE;
    }
}

/// Makes [`CONTROLLER_MODULES`] from the registry's controller specs.
macro_rules! controller_table {
    ($($module:ident::$spec:ident),*) => {
        /// Every module imgbuild runs itself, by its planner spec's name.
        static CONTROLLER_MODULES: &[(&str, RunController)] = &[
            $((modules::$module::$spec.name, controller_modules::$module::$spec),)*
        ];
    };
}

modules::for_each_controller_module!(controller_table);

#[cfg(test)]
mod controller_table_tests {
    use super::CONTROLLER_MODULES;

    /// The planner's controller modules and this table are two lists: every module the planner
    /// runs in imgbuild itself has an implementation here, and every one here is planned.
    #[test]
    fn the_planner_and_the_engine_know_the_same_controller_modules() {
        let mut planned: Vec<&str> = modules::ALL
            .iter()
            .filter(|spec| spec.runs() == modules::Runs::Controller)
            .map(|spec| spec.name)
            .collect();
        let mut implemented: Vec<&str> = CONTROLLER_MODULES.iter().map(|(name, _)| *name).collect();
        let listed = implemented.len();
        planned.sort_unstable();
        implemented.sort_unstable();
        implemented.dedup();
        assert_eq!(implemented.len(), listed, "a module listed twice");
        assert_eq!(planned, implemented);
    }
}
