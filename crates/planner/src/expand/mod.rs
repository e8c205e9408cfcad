//! Walks task lists into plan steps: loops, conditions, blocks, includes and modules.

mod become_user;
mod catching;
mod delegation;
mod emit;
mod errors;
mod handler_alias;
mod includes;
mod inventory;
mod keywords;
mod loops;
mod module_defaults;
mod module_pass;
mod role_files;
mod specifics;
mod task_pass;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value as Json;

use crate::error::{ErrorKind, Location, PlanError, Result};
use crate::modules::spec::PackageFamily;
use crate::modules::ModuleSpec;
use crate::plan::{LoopItem, Step, Warning};
use crate::planner::{Planner, RefusedHandler};
use crate::roles::{find_role, var_layer, yaml_file};
use crate::task::{parse_task, Action, TaskDef};

use crate::vars::{Layer, Scope, VarValue};
use crate::yaml::{Node, Value};

pub(crate) use crate::task_context::{role_magic, Ctx};

/// Includes nested deeper than this are taken for an include loop.
const MAX_INCLUDE_DEPTH: usize = 48;

/// One pass of a task: a loop iteration, or the task itself.
#[derive(Clone)]
struct Pass {
    scope: Scope,
    whens: Vec<String>,
    item: Option<LoopItem>,
    loop_over: Option<Json>,
}

fn and_all(conditions: &[String]) -> Option<String> {
    match conditions {
        [] => None,
        [one] => Some(one.clone()),
        many => Some(
            many.iter()
                .map(|c| format!("({c})"))
                .collect::<Vec<_>>()
                .join(" and "),
        ),
    }
}

fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out = a.to_vec();
    for t in b {
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    out
}

impl Planner<'_> {
    pub(crate) fn full(&self, scope: &Scope) -> Scope {
        // Below every other layer: the role defaults and vars of the imports so far (role vars
        // of an import lose here to play vars of the same name, where Ansible's would win).
        let [defaults, vars] = &self.exposed;
        scope
            .with_bottom_layer(vars.clone())
            .with_bottom_layer(defaults.clone())
            .with_facts_set(self.facts_set.clone())
    }

    pub(crate) fn render(
        &self,
        value: &Json,
        scope: &Scope,
        at: &Location,
        task: Option<&str>,
    ) -> Result<Option<Json>> {
        self.templar
            .render(value, &self.full(scope))
            .map_err(|e| self.template_error(at, task, e))
    }

    pub(crate) fn warn(&mut self, at: &Location, message: impl Into<String>) {
        let warning = Warning {
            source: at.to_string(),
            message: message.into(),
        };
        if !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
    }

    /// Plans a task file.
    pub(crate) fn plan_file(&mut self, file: &Path, ctx: &Ctx, out: &mut Vec<Step>) -> Result<()> {
        let node = self.sources.yaml(file)?;
        let ctx = Ctx {
            file: file.to_owned(),
            ..ctx.clone()
        };
        if matches!(node.value, Value::Null) {
            self.warn(&Location::file(file), "task file is empty");
            return Ok(());
        }
        self.plan_list(&node, &ctx, out)
    }

    /// Plans a list of tasks.
    pub(crate) fn plan_list(&mut self, node: &Node, ctx: &Ctx, out: &mut Vec<Step>) -> Result<()> {
        match &node.value {
            Value::Null => Ok(()),
            Value::Seq(items) => items
                .iter()
                .try_for_each(|item| self.plan_task(item, ctx, out)),
            _ => Err(PlanError::new(
                Location::new(&ctx.file, node.line),
                ErrorKind::WrongType {
                    what: "a task list".into(),
                    expected: "a list of tasks",
                    found: node.type_name(),
                },
            )),
        }
    }

    fn plan_task(&mut self, node: &Node, ctx: &Ctx, out: &mut Vec<Step>) -> Result<()> {
        let Some(mut def) = self.parse_in_context(node, ctx, out)? else {
            return Ok(());
        };
        let at = Location::new(&ctx.file, def.line);
        self.point_lookups_at(ctx);
        for note in &def.notes {
            self.warn(&at, note.clone());
        }
        let scope = ctx.scope.with_layer(crate::vars::layer_from(&def.vars));
        let tags = union(&ctx.tags, &def.tags);
        self.tags_seen.extend(tags.iter().cloned());
        let is_module = matches!(
            def.action,
            Action::Module { .. } | Action::TemplatedModule(_)
        );
        if is_module && !ctx.handlers && !self.opts.tags.selects(&tags) {
            self.register_deferred(&def);
            return Ok(());
        }
        let names = self.handler_names_of(&def, &scope, ctx);
        match self.refusal(&mut def, ctx, &scope, &at) {
            // Ansible runs a handler only when notified: refused only then (planner.rs).
            Some(error) if ctx.handlers => {
                self.refused_handlers.push(RefusedHandler { names, error });
                return Ok(());
            }
            Some(refused) => return Err(refused),
            None => {}
        }
        if crate::template::is_template(&def.loop_var) {
            // `loop_control.loop_var: "{{ name }}"`: Ansible templates it with the task's vars.
            let raw = Json::String(def.loop_var.clone());
            if let Some(Json::String(name)) = self.render(&raw, &scope, &at, def.name.as_deref())? {
                def.loop_var = name;
            }
        }
        let Some(passes) = self.passes_or_failing_task(&def, &scope, ctx, &at, &tags, out)? else {
            return Ok(());
        };
        let mut ran_any = false;
        for pass in passes.into_iter().flatten() {
            ran_any = true;
            self.plan_pass(&def, &pass, ctx, &tags, &at, out)?;
        }
        if ran_any {
            self.register_deferred(&def);
        } else {
            self.register_skipped(&def);
            self.register_skipped_block(&def, ctx);
        }
        Ok(())
    }

    /// The task `node` read, or, when it cannot be read in a file only the build may load,
    /// a task that fails there (pushed to `out`; `None`).
    fn parse_in_context<'n>(
        &mut self,
        node: &'n Node,
        ctx: &Ctx,
        out: &mut Vec<Step>,
    ) -> Result<Option<TaskDef<'n>>> {
        let parsed = parse_task(node, &ctx.file, &|name| {
            self.ansible_module(name, ctx).is_some()
        })
        .map_err(|e| self.role_action_plugin(e, ctx));
        match parsed {
            Ok(def) => Ok(Some(def)),
            Err(error) if ctx.loaded_at_run => {
                out.push(self.unread_task(node, ctx, error)?);
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }

    /// Where the lookups of the task rendered next look: the role's `files/`, then the first
    /// of its `templates/` and `vars/` folders.
    fn point_lookups_at(&self, ctx: &Ctx) {
        let mut lookup_dirs = self.file_search("files", ctx);
        for sub in ["templates", "vars"] {
            lookup_dirs.extend(self.file_search(sub, ctx).into_iter().take(1));
        }
        crate::template::lookups::set_search(&self.project.root, lookup_dirs);
    }

    /// The names a notify may give a handler (its rendered name and its `listen`), known
    /// even when its `when` drops it from this plan; none for a task.
    fn handler_names_of(&mut self, def: &TaskDef, scope: &Scope, ctx: &Ctx) -> Vec<String> {
        let mut names = Vec::new();
        if !ctx.handlers {
            return names;
        }
        if let Some(name) = &def.name {
            let rendered = self
                .templar
                .render_text(name, &self.full(scope))
                .ok()
                .flatten()
                .unwrap_or_else(|| name.clone());
            names.push(rendered);
        }
        names.extend(def.listen.iter().cloned());
        self.handler_names.extend(names.iter().cloned());
        names
    }

    /// Why the task is refused (a keyword imgbuild refuses, a delegation it cannot do), when
    /// it is and it would run.
    fn refusal(
        &mut self,
        def: &mut TaskDef,
        ctx: &Ctx,
        scope: &Scope,
        at: &Location,
    ) -> Option<PlanError> {
        let refused = match def.refused.take() {
            Some(refused) => Some(refused),
            None => self.judge_delegation(def, ctx, scope),
        };
        // Ansible decides `when` before it looks at delegate_to: a task that never runs (its
        // `when` false, or its loop empty) is never delegated.
        if refused.is_some() && def.delegate_to.is_some() {
            let skipped = matches!(self.pass(def, scope.clone(), ctx, None, None, at), Ok(None))
                || self.loops_over_nothing(def, scope, ctx, at);
            if skipped {
                return None;
            }
        }
        refused
    }

    fn register_deferred(&mut self, def: &TaskDef) {
        if let Some(register) = &def.register {
            Arc::make_mut(&mut self.facts_set).insert(register.clone(), VarValue::Deferred);
        }
    }

    fn child_ctx(
        &self,
        ctx: &Ctx,
        def: &TaskDef,
        pass: &Pass,
        tags: Vec<String>,
        label: Option<&str>,
        at: &Location,
    ) -> Result<Ctx> {
        Ok(Ctx {
            scope: pass.scope.clone(),
            when: pass.whens.clone(),
            tags,
            environment: self.environment(ctx, def.environment.as_ref(), &pass.scope, at, label)?,
            module_defaults: ctx
                .module_defaults
                .iter()
                .chain(&def.module_defaults)
                .cloned()
                .collect(),
            ignore_errors: self.ignore_errors(
                ctx,
                def.ignore_errors.as_ref(),
                &pass.scope,
                at,
                label,
            )?,
            become_keywords: become_user::inherited(ctx, def),
            check_mode: def.check_mode.clone().or_else(|| ctx.check_mode.clone()),
            diff: def.diff.clone().or_else(|| ctx.diff.clone()),
            delegate_to: def.delegate_to.clone().or_else(|| ctx.delegate_to.clone()),
            depth: ctx.depth + 1,
            ..ctx.clone()
        })
    }

    /// Plans a role's `handlers/main.yml` once.
    pub(crate) fn plan_role_handlers(&mut self, role_dir: &Path, ctx: &Ctx) -> Result<()> {
        if self.handler_roles.iter().any(|r| r == role_dir) {
            return Ok(());
        }
        self.handler_roles.push(role_dir.to_owned());
        let Some(file) = yaml_file(&self.sources, &role_dir.join("handlers"), "main") else {
            return Ok(());
        };
        let handler_ctx = Ctx {
            handlers: true,
            when: Vec::new(),
            ..ctx.clone()
        };
        let node = self.sources.yaml(&file)?;
        let handler_ctx = Ctx {
            file: file.clone(),
            ..handler_ctx
        };
        if !matches!(node.value, Value::Seq(_) | Value::Null) {
            return self.plan_list(&node, &handler_ctx, &mut Vec::new());
        }
        let mut handlers = Vec::new();
        for handler in node.value_seq() {
            // Ansible reads a handler (an include's tasks too) only when it runs: one that does
            // not plan is refused only if a task notifies it.
            // A handler that is not a task is an error whether notified or not, as when
            // Ansible loads the play.
            parse_task(handler, &file, &|name| {
                self.ansible_module(name, &handler_ctx).is_some()
            })?;
            let planned = handlers.len();
            if let Err(error) = self.plan_task(handler, &handler_ctx, &mut handlers) {
                handlers.truncate(planned);
                let names = [handler.get("name"), handler.get("listen")]
                    .into_iter()
                    .flatten()
                    .flat_map(|n| match n.as_str() {
                        Some(one) => vec![one.to_owned()],
                        None => n
                            .value_seq()
                            .iter()
                            .filter_map(|l| l.as_str().map(str::to_owned))
                            .collect(),
                    })
                    .collect();
                self.refused_handlers.push(RefusedHandler { names, error });
            }
        }
        for step in &handlers {
            for task in step.tasks() {
                self.handler_names.push(task.name.clone());
                self.handler_names.extend(task.listen.iter().cloned());
            }
        }
        let first = self.handlers.len();
        self.handlers.extend(handlers);
        self.note_handler_aliases(&ctx.scope, first..self.handlers.len());
        Ok(())
    }

    /// Warns about `mode: 644` written without a leading 0 (YAML reads it as decimal).
    /// A package-manager module that is not the image's, run unconditionally, is a plan error
    /// (Ansible would fail on the image when it runs it): `dnf` in an apt image, `apt` in a dnf
    /// one. Behind a `when` only the build decides, the task is left to the build.
    fn check_package_manager(
        &self,
        spec: &'static ModuleSpec,
        pass: &Pass,
        at: &Location,
    ) -> Result<()> {
        let Some(family) = spec.family else {
            return Ok(());
        };
        let Some(VarValue::Raw(Json::String(pkg_mgr))) = pass.scope.get("ansible_pkg_mgr") else {
            return Ok(());
        };
        if !pass.whens.is_empty() || PackageFamily::of_pkg_mgr(pkg_mgr) == Some(family) {
            return Ok(());
        }
        Err(PlanError::new(
            at.clone(),
            ErrorKind::Recipe(format!(
                "module '{}' is for {} images, and this image's package manager (ansible_pkg_mgr) is {pkg_mgr}; guard the task with a when on ansible_pkg_mgr or ansible_os_family, or use the package module",
                spec.name,
                family.name()
            )),
        ))
    }

    fn warn_decimal_mode(&mut self, node: &Node, file: &Path) {
        for key in ["mode", "directory_mode"] {
            let Some(mode) = node.get(key) else { continue };
            if let (Value::Int(n), Some(raw)) = (&mode.value, &mode.raw) {
                if !raw.starts_with('0') && *n >= 8 {
                    let bits = u32::try_from(*n).unwrap_or(0);
                    self.warn(
                        &Location::new(file, mode.line),
                        format!("{key}: {raw} is the decimal number {n}, which Ansible applies as mode {bits:04o}; write '0{raw}' (quoted) if you meant octal"),
                    );
                }
            }
        }
    }
}
