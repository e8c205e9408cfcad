//! A module's task for one pass, as the plan keeps it: its arguments rendered (or deferred
//! to the build) and checked, its keywords decided, and what its module needs at plan time.

use indexmap::IndexMap;
use serde_json::{Map, Value as Json};

use super::errors::module_args_error;
use super::{and_all, Ctx, Pass};
use crate::error::{ErrorKind, Location, PlanError, Result};
use crate::modules::types::parse_bool;
use crate::modules::ModuleSpec;
use crate::plan::{PlannedTask, Retry, Step};
use crate::planner::Planner;
use crate::task::TaskDef;
use crate::template::OMIT;
use crate::yaml::Node;

/// A task's keywords, decided for one pass.
struct TaskKeywords {
    check_mode: Option<bool>,
    diff: Option<bool>,
    become_user: Option<(String, bool)>,
    ignore_errors: Option<Json>,
    changed_when: Option<String>,
    failed_when: Option<String>,
    until: Option<Retry>,
    no_log: bool,
}

/// A module's arguments after rendering: the values, and the names only the build can render.
struct RenderedArgs {
    args: Map<String, Json>,
    deferred: Vec<String>,
}

impl Planner<'_> {
    /// Plans the task of `spec` for one pass of `def` into `out`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn emit_module(
        &mut self,
        def: &TaskDef,
        spec: &'static ModuleSpec,
        raw_args: &Map<String, Json>,
        node: &Node,
        pass: &Pass,
        ctx: &Ctx,
        tags: &[String],
        at: &Location,
        out: &mut Vec<Step>,
    ) -> Result<()> {
        let label = def.name.as_deref();
        if pass.item.as_ref().is_some_and(|i| i.skipped) {
            // Ansible decides `when` before it renders the arguments: nothing to render.
            let task = skipped_item_task(def, spec, pass, ctx, tags, at);
            out.push(Step::Task(Box::new(task)));
            return Ok(());
        }
        self.warn_decimal_mode(node, &ctx.file);
        self.check_package_manager(spec, pass, at)?;
        let environment =
            self.environment(ctx, def.environment.as_ref(), &pass.scope, at, label)?;
        let pass = &with_environment_variable(pass, &environment);
        let raw_args = &with_module_defaults(def, spec, raw_args, pass, ctx, at)?;
        let rendered = self.render_args(spec, raw_args, pass, at, label)?;
        let background = self.refuse_async(def, spec.name, &pass.scope, at)?;
        let (spec, args, deferred) = self.chosen_module(spec, rendered, pass, ctx, at)?;
        let keywords = self.task_keywords(def, pass, ctx, at)?;
        let mut task = PlannedTask {
            role: ctx.layer.to_string(),
            name: self.task_name(def, spec, pass),
            module: spec.name.to_owned(),
            args,
            tags: tags.to_vec(),
            when: and_all(&pass.whens),
            source: at.to_string(),
            delegated_to_image: def.delegate_to.is_some() && !def.on_controller,
            on_controller: def.on_controller,
            check_mode: keywords.check_mode,
            diff: keywords.diff,
            become_user_at_build: keywords.become_user.as_ref().is_some_and(|(_, at)| *at),
            become_user: keywords.become_user.map(|(user, _)| user),
            deferred,
            item: pass.item.clone(),
            loop_over: pass.loop_over.clone(),
            loop_var: pass.loop_over.as_ref().map(|_| def.loop_var.clone()),
            loop_index_var: pass.loop_over.as_ref().and_then(|_| def.index_var.clone()),
            loop_extended: pass.loop_over.is_some() && def.loop_extended,
            loop_pause: def.loop_pause,
            register: def.register.clone(),
            unreachable: def.unreachable.clone(),
            background,
            notify: def.notify.clone(),
            listen: def.listen.clone(),
            ignore_errors: keywords.ignore_errors,
            changed_when: keywords.changed_when,
            failed_when: keywords.failed_when,
            until: keywords.until,
            environment: environment.into_iter().flatten().collect(),
            no_log: keywords.no_log,
            local_file: None,
            local_search: Vec::new(),
            rendered: None,
            context: IndexMap::new(),
            fails: None,
            var_files: Vec::new(),
        };
        task.notify = self.notify_names(&def.notify, pass, at, label)?;
        if never_changes(def, spec) {
            // Ansible looks for a handler only when a task changes: none is needed here.
            self.notified.retain(|(_, from)| from != at);
        }
        self.module_specifics(spec, &mut task, pass, ctx, at, label)?;
        task.context = self.runtime_context(&task, raw_args, &pass.scope);
        out.push(Step::Task(Box::new(task)));
        Ok(())
    }

    /// The module a task runs, its arguments and those only the build renders: imgbuild's
    /// `spec` when it takes the arguments, else what [`Self::module_of_ansible`] finds.
    fn chosen_module(
        &self,
        spec: &'static ModuleSpec,
        rendered: RenderedArgs,
        pass: &Pass,
        ctx: &Ctx,
        at: &Location,
    ) -> Result<(&'static ModuleSpec, Json, Vec<String>)> {
        let written = Json::Object(rendered.args);
        match (spec.normalize)(written.clone()) {
            Ok(args) => {
                let deferred =
                    crate::modules::canonical_deferred(rendered.deferred, &written, &args);
                Ok((spec, args, deferred))
            }
            Err(message) => match package_backend(spec, &written, &rendered.deferred, pass) {
                Some((backend, written)) => self
                    .module_of_ansible(backend, written, &message, rendered.deferred, ctx, at)
                    .map_err(handed_to_backend),
                None => self.module_of_ansible(spec, written, &message, rendered.deferred, ctx, at),
            },
        }
    }

    /// The module a task runs when imgbuild's `spec` refuses its arguments (`message`): the
    /// same native module when it takes them after all (a `package` handed to its backend),
    /// else Ansible's own module, else the refusal.
    fn module_of_ansible(
        &self,
        spec: &'static ModuleSpec,
        written: Json,
        message: &str,
        deferred: Vec<String>,
        ctx: &Ctx,
        at: &Location,
    ) -> Result<(&'static ModuleSpec, Json, Vec<String>)> {
        let message = match (spec.normalize)(written.clone()) {
            Ok(args) => {
                let deferred = crate::modules::canonical_deferred(deferred, &written, &args);
                return Ok((spec, args, deferred));
            }
            Err(_) if spec.name == "package" => message.to_owned(),
            Err(own) => own,
        };
        let (spec, args) = self
            .through_ansible(spec, &written, &message, ctx)
            .ok_or_else(|| module_args_error(spec.name, &message, at))?;
        // Ansible's module gets its arguments as one mapping, rendered when it runs.
        let deferred = if deferred.is_empty() {
            Vec::new()
        } else {
            vec!["args".to_owned()]
        };
        Ok((spec, args, deferred))
    }

    /// A native module given an option Ansible's module takes and imgbuild's does not: the
    /// task runs with Ansible's own module instead (ansible-core's, when Ansible runs it
    /// without an action plugin of its own), with the arguments as written. `None` when the
    /// option is not Ansible's either or was removed before 2.14.
    fn through_ansible(
        &self,
        spec: &'static ModuleSpec,
        written: &Json,
        message: &str,
        ctx: &Ctx,
    ) -> Option<(&'static ModuleSpec, Json)> {
        let ansibles = crate::modules::mount::left_to_ansible(spec.name, written)
            || super::errors::unknown_field(message).is_some_and(|field| {
                crate::modules::not_yet_supported(spec.name, field).is_some()
                    && crate::modules::ansible_options::removed(spec.name, field).is_none()
            });
        if !ansibles {
            return None;
        }
        self.ansible_module(spec.name, ctx)?.host.as_ref()?;
        let own = written.as_object()?.clone();
        let wrapped = crate::modules::role_module::wrap(spec.name, own);
        Some((&crate::modules::role_module::SPEC, Json::Object(wrapped)))
    }

    /// The task's keywords, each decided for this pass: check and diff mode, become, errors,
    /// conditions, retries and `no_log`.
    fn task_keywords(
        &mut self,
        def: &TaskDef,
        pass: &Pass,
        ctx: &Ctx,
        at: &Location,
    ) -> Result<TaskKeywords> {
        let label = def.name.as_deref();
        Ok(TaskKeywords {
            check_mode: self.bool_keyword(
                "check_mode",
                &def.check_mode,
                &ctx.check_mode,
                pass,
                def,
                at,
            )?,
            diff: self.bool_keyword("diff", &def.diff, &ctx.diff, pass, def, at)?,
            become_user: self.become_user(
                &def.become_keywords.over(&ctx.become_keywords),
                &pass.scope,
                at,
                label,
            )?,
            ignore_errors: self.ignore_errors(
                ctx,
                def.ignore_errors.as_ref(),
                &pass.scope,
                at,
                label,
            )?,
            changed_when: self.runtime_expression(&def.changed_when, at)?,
            failed_when: self.runtime_expression(&def.failed_when, at)?,
            until: self.retry(def, pass, at)?,
            no_log: self.no_log(def, pass, at)?,
        })
    }

    /// Every argument rendered now, or kept as written for the build when it uses build-time
    /// results; `omit` drops one; a site mirror URL has its repeated slashes collapsed.
    fn render_args(
        &mut self,
        spec: &ModuleSpec,
        raw_args: &Map<String, Json>,
        pass: &Pass,
        at: &Location,
        label: Option<&str>,
    ) -> Result<RenderedArgs> {
        let mut args = Map::new();
        let mut deferred = Vec::new();
        let named_args = self.rendered_fact_names(spec, raw_args, pass, at, label)?;
        for (key, value) in named_args.iter() {
            let is_url = spec.url_params.contains(&key.as_str());
            match self.render(value, &pass.scope, at, label)? {
                Some(Json::String(s)) if s == OMIT => {}
                Some(rendered @ (Json::String(_) | Json::Array(_))) if is_url => {
                    args.insert(key.clone(), collapsed_url_slashes(rendered));
                }
                Some(rendered) if crate::template::contains_template(value) => {
                    args.insert(
                        key.clone(),
                        crate::modules::templated_argument(key, rendered),
                    );
                }
                Some(rendered) => {
                    args.insert(key.clone(), rendered);
                }
                None => {
                    deferred.push(key.clone());
                    args.insert(key.clone(), value.clone());
                }
            }
        }
        Ok(RenderedArgs { args, deferred })
    }

    /// The task's name rendered (as written when it cannot be), or the module's.
    fn task_name(&self, def: &TaskDef, spec: &ModuleSpec, pass: &Pass) -> String {
        match &def.name {
            Some(raw) => self
                .templar
                .render_text(raw, &self.full(&pass.scope))
                .ok()
                .flatten()
                .unwrap_or_else(|| raw.clone()),
            None => spec.name.to_owned(),
        }
    }

    /// `until` with its `retries` (3 unless given) and `delay` (5 unless given).
    fn retry(&mut self, def: &TaskDef, pass: &Pass, at: &Location) -> Result<Option<Retry>> {
        let Some(until) = &def.until else {
            return Ok(None);
        };
        let label = def.name.as_deref();
        let until = self
            .runtime_expression(std::slice::from_ref(until), at)?
            .unwrap_or_default();
        let keyword = |given: &Option<Json>, default: u32| -> Result<Json> {
            Ok(match given {
                Some(raw) => self
                    .render(raw, &pass.scope, at, label)?
                    .unwrap_or_else(|| raw.clone()),
                None => Json::from(default),
            })
        };
        let retries = keyword(&def.retries, 3)?;
        let delay = keyword(&def.delay, 5)?;
        Ok(Some(Retry {
            until,
            retries,
            delay,
        }))
    }

    /// `no_log`: true unless it renders to a false boolean or text.
    fn no_log(&mut self, def: &TaskDef, pass: &Pass, at: &Location) -> Result<bool> {
        let Some(no_log) = &def.no_log else {
            return Ok(false);
        };
        Ok(
            match self.render(no_log, &pass.scope, at, def.name.as_deref())? {
                Some(Json::Bool(b)) => b,
                Some(Json::String(s)) => parse_bool(&s).unwrap_or(true),
                _ => true,
            },
        )
    }
}

/// The task of a loop item its `when` skipped: nothing rendered, never run.
fn skipped_item_task(
    def: &TaskDef,
    spec: &ModuleSpec,
    pass: &Pass,
    ctx: &Ctx,
    tags: &[String],
    at: &Location,
) -> PlannedTask {
    PlannedTask {
        role: ctx.layer.to_string(),
        name: def.name.clone().unwrap_or_else(|| spec.name.to_owned()),
        module: spec.name.to_owned(),
        args: Json::Object(Map::new()),
        tags: tags.to_vec(),
        when: Some("False".into()),
        source: at.to_string(),
        item: pass.item.clone(),
        register: def.register.clone(),
        ..PlannedTask::default()
    }
}

/// The pass with `environment` (the task's environment mappings) as a variable.
/// Whether the task never reports a change, so never notifies: `changed_when: false`, or a
/// module that changes nothing.
fn never_changes(def: &TaskDef, spec: &ModuleSpec) -> bool {
    let unchanged = |c: &Json| match c {
        Json::Bool(b) => !b,
        Json::String(s) => matches!(s.trim(), "false" | "False" | "no"),
        _ => false,
    };
    if def.changed_when.is_empty() {
        matches!(
            spec.name,
            "debug" | "assert" | "fail" | "set_fact" | "stat" | "slurp"
        )
    } else {
        def.changed_when.iter().all(unchanged)
    }
}

/// A refusal of the backend a `package` task was handed to, saying so.
fn handed_to_backend(mut error: PlanError) -> PlanError {
    if let ErrorKind::Module { module, .. } = &mut error.kind {
        *module = format!("package (every option handed to {module})");
    }
    error
}

/// `package` given an option only its backend takes (`update_cache`, `enablerepo`, `purge`,
/// ...): the image's package manager module (apt or dnf) with every option but `use`, as
/// Ansible's package action hands them on. `None` for any other module, or when the backend is
/// not known while planning. A `use` only the build knows (`ternary(..., omit)` over a
/// registered result) is taken as `auto`: the image's own manager, the one an image has.
fn package_backend(
    spec: &'static ModuleSpec,
    written: &Json,
    deferred: &[String],
    pass: &Pass,
) -> Option<(&'static ModuleSpec, Json)> {
    if spec.name != "package" {
        return None;
    }
    let mut args = written.as_object()?.clone();
    let chosen = args
        .remove("use")
        .filter(|_| !deferred.iter().any(|d| d == "use"));
    let manager = match chosen.as_ref().and_then(Json::as_str) {
        Some(name) if name != "auto" => name.to_owned(),
        _ => match pass.scope.get("ansible_pkg_mgr") {
            Some(crate::vars::VarValue::Raw(Json::String(name))) => name.clone(),
            _ => return None,
        },
    };
    let backend = crate::modules::lookup(&manager).filter(|b| b.family.is_some())?;
    Some((backend, Json::Object(args)))
}

/// The task's arguments as written with the `module_defaults` it inherits and its own beneath
/// them (for a module run with Ansible's code, its own arguments).
fn with_module_defaults(
    def: &TaskDef,
    spec: &'static ModuleSpec,
    raw_args: &Map<String, Json>,
    pass: &Pass,
    ctx: &Ctx,
    at: &Location,
) -> Result<Map<String, Json>> {
    let chain: Vec<&Json> = ctx
        .module_defaults
        .iter()
        .chain(&def.module_defaults)
        .collect();
    if chain.is_empty() {
        return Ok(raw_args.clone());
    }
    let pkg_mgr = match pass.scope.get("ansible_pkg_mgr") {
        Some(crate::vars::VarValue::Raw(Json::String(name))) => Some(name.as_str()),
        _ => None,
    };
    if spec.name != crate::modules::role_module::MODULE {
        return super::module_defaults::apply(spec.name, raw_args, &chain, pkg_mgr, at);
    }
    let module = raw_args.get("module").and_then(Json::as_str).unwrap_or("");
    let own = raw_args
        .get("args")
        .and_then(Json::as_object)
        .cloned()
        .unwrap_or_default();
    let mut wrapped = raw_args.clone();
    let applied = super::module_defaults::apply(module, &own, &chain, pkg_mgr, at)?;
    wrapped.insert("args".into(), Json::Object(applied));
    Ok(wrapped)
}

fn with_environment_variable(pass: &Pass, environment: &[IndexMap<String, Json>]) -> Pass {
    let env_var = Json::Array(
        environment
            .iter()
            .map(|m| Json::Object(m.clone().into_iter().collect()))
            .collect(),
    );
    Pass {
        scope: pass.scope.with_layer(crate::vars::layer_from([(
            &"environment".to_owned(),
            &env_var,
        )])),
        ..pass.clone()
    }
}

/// A URL (or list of URLs) of the site mirror with repeated slashes in its path collapsed.
fn collapsed_url_slashes(rendered: Json) -> Json {
    match rendered {
        Json::String(s) => Json::String(mirror::collapse_path_slashes(&s)),
        Json::Array(items) => Json::Array(
            items
                .into_iter()
                .map(|i| match i {
                    Json::String(s) => Json::String(mirror::collapse_path_slashes(&s)),
                    other => other,
                })
                .collect(),
        ),
        other => other,
    }
}
