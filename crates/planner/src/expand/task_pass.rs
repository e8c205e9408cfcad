//! One pass of a task (a loop iteration, or the task itself) planned by what it runs: a
//! module, a block, an include of tasks or of a role; and what a task the plan skips
//! registers.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value as Json;

use super::{union, Ctx, Pass};
use crate::error::{ErrorKind, Location, PlanError, Result};
use crate::plan::{PlannedBlock, Step};
use crate::planner::Planner;
use crate::task::{Action, TaskDef};
use crate::vars::{Layer, VarValue};
use crate::yaml::Node;

impl Planner<'_> {
    /// Plans one pass of `def`.
    pub(super) fn plan_pass(
        &mut self,
        def: &TaskDef,
        pass: &Pass,
        ctx: &Ctx,
        tags: &[String],
        at: &Location,
        out: &mut Vec<Step>,
    ) -> Result<()> {
        let label = def.name.as_deref();
        match &def.action {
            Action::Module { spec, args, node } => {
                let module = Ok((*spec, Cow::Borrowed(args), *node));
                self.module_pass(def, module, spec.name, pass, ctx, tags, at, out)
            }
            Action::TemplatedModule(action) => {
                let module = self.templated_module(action, pass, ctx, at, label);
                let named = action.name.as_str();
                self.module_pass(def, module, named, pass, ctx, tags, at, out)
            }
            Action::Block {
                block,
                rescue,
                always,
            } => {
                let parts = BlockParts {
                    block,
                    rescue: *rescue,
                    always: *always,
                };
                self.plan_block_pass(def, parts, pass, ctx, tags, at, out)
            }
            Action::Include { .. } => self.plan_include_pass(def, pass, ctx, tags, at, out),
            Action::IncludeRole { .. } => {
                self.plan_include_role_pass(def, pass, ctx, tags, at, out)
            }
        }
    }

    /// A block: its tasks, and its `rescue` and `always` lists when it has them.
    #[allow(clippy::too_many_arguments)]
    fn plan_block_pass(
        &mut self,
        def: &TaskDef,
        parts: BlockParts<'_>,
        pass: &Pass,
        ctx: &Ctx,
        tags: &[String],
        at: &Location,
        out: &mut Vec<Step>,
    ) -> Result<()> {
        if def.looping.is_some() {
            return Err(PlanError::new(at.clone(), ErrorKind::Recipe("a block cannot loop; put the loop on the tasks inside, or loop over include_tasks".into())));
        }
        let label = def.name.as_deref();
        let child = Ctx {
            rescued: ctx.rescued || parts.rescue.is_some(),
            ..self.child_ctx(ctx, def, pass, tags.to_vec(), label, at)?
        };
        if parts.rescue.is_none() && parts.always.is_none() {
            return self.plan_list(parts.block, &child, out);
        }
        let mut planned = PlannedBlock {
            role: ctx.layer.to_string(),
            name: def.name.clone().unwrap_or_else(|| "block".into()),
            when: None,
            source: at.to_string(),
            block: Vec::new(),
            rescue: Vec::new(),
            always: Vec::new(),
        };
        self.plan_list(parts.block, &child, &mut planned.block)?;
        if let Some(rescue) = parts.rescue {
            // What failed is known only when the build runs the rescue.
            let mut failed = Layer::new();
            failed.insert("ansible_failed_task".into(), VarValue::Deferred);
            failed.insert("ansible_failed_result".into(), VarValue::Deferred);
            let rescue_ctx = Ctx {
                scope: child.scope.with_layer(Arc::new(failed)),
                rescued: ctx.rescued,
                ..child.clone()
            };
            self.plan_list(rescue, &rescue_ctx, &mut planned.rescue)?;
        }
        if let Some(always) = parts.always {
            let always_ctx = Ctx {
                rescued: ctx.rescued,
                ..child.clone()
            };
            self.plan_list(always, &always_ctx, &mut planned.always)?;
        }
        out.push(Step::Block(Box::new(planned)));
        Ok(())
    }

    /// `include_tasks`/`import_tasks`: the file's tasks, with the tags the include gives them.
    fn plan_include_pass(
        &mut self,
        def: &TaskDef,
        pass: &Pass,
        ctx: &Ctx,
        tags: &[String],
        at: &Location,
        out: &mut Vec<Step>,
    ) -> Result<()> {
        let Action::Include {
            file,
            is_static,
            apply_tags,
        } = &def.action
        else {
            return Ok(());
        };
        if self.include_not_selected(*is_static, ctx, tags) {
            return Ok(());
        }
        if *is_static && def.looping.is_some() {
            return Err(PlanError::new(
                at.clone(),
                ErrorKind::Recipe("import_tasks cannot loop; use include_tasks".into()),
            ));
        }
        let label = def.name.as_deref();
        let name = match self.render(file, &pass.scope, at, label)? {
            Some(Json::String(name)) => name,
            Some(other) => {
                return Err(PlanError::new(
                    at.clone(),
                    ErrorKind::WrongType {
                        what: "the include file".into(),
                        expected: "a file name",
                        found: crate::modules::types::json_type(&other),
                    },
                ))
            }
            // Behind a `when` only the build decides, the include may never run (Ansible then
            // never names its file): a task that fails if it does, and is skipped otherwise.
            None if !pass.whens.is_empty() => {
                let why = format!(
                    "the file name of include_tasks ({}) is known only while building, and imgbuild plans an include's tasks before the build: give it a name the plan knows",
                    file.as_str().unwrap_or_default()
                );
                let error = PlanError::new(at.clone(), ErrorKind::ActionRefuses(why));
                let step =
                    self.fail_at_build(def, "include_tasks", ctx, &pass.whens, tags, error)?;
                out.push(step);
                return Ok(());
            }
            None => return Err(PlanError::new(
                at.clone(),
                ErrorKind::Recipe(
                    "the include file name uses build-time results; it must be known when planning"
                        .into(),
                ),
            )),
        };
        let path = self.include_path(&name, ctx, at)?;
        let child = self.include_ctx(def, *is_static, apply_tags, pass, ctx, tags, at)?;
        self.plan_file(&path, &child, out)
    }

    /// `include_role`/`import_role`: the role's tasks (or `tasks_from`), defaults and vars.
    fn plan_include_role_pass(
        &mut self,
        def: &TaskDef,
        pass: &Pass,
        ctx: &Ctx,
        tags: &[String],
        at: &Location,
        out: &mut Vec<Step>,
    ) -> Result<()> {
        let Action::IncludeRole {
            name,
            tasks_from,
            defaults_from,
            vars_from,
            is_static,
            apply_tags,
            public,
        } = &def.action
        else {
            return Ok(());
        };
        if self.include_not_selected(*is_static, ctx, tags) {
            return Ok(());
        }
        let child = self.include_ctx(def, *is_static, apply_tags, pass, ctx, tags, at)?;
        // The name and the files are templated with the task's variables, as Ansible does.
        let label = def.name.as_deref();
        let name = self.role_include_text("name", name, pass, at, label)?;
        let mut froms = Vec::new();
        for (what, from) in [
            ("tasks_from", tasks_from),
            ("defaults_from", defaults_from),
            ("vars_from", vars_from),
        ] {
            froms.push(match from {
                Some(text) => Some(self.role_include_text(what, text, pass, at, label)?),
                None => None,
            });
        }
        let froms = [
            froms[0].as_deref(),
            froms[1].as_deref(),
            froms[2].as_deref(),
        ];
        let task_vars = crate::vars::layer_from(&def.vars);
        // An import's defaults and vars are the play's from then on; an include's only with
        // `public: true`.
        let public = *is_static || *public;
        self.plan_included_role(&name, froms, public, task_vars, &child, at, out)
    }

    /// An `include_role` option templated with the task's variables; one only the build knows
    /// is refused, naming it.
    fn role_include_text(
        &self,
        what: &str,
        text: &str,
        pass: &Pass,
        at: &Location,
        label: Option<&str>,
    ) -> Result<String> {
        if !crate::template::is_template(text) {
            return Ok(text.to_owned());
        }
        match self.render(&Json::String(text.to_owned()), &pass.scope, at, label)? {
            Some(Json::String(rendered)) => Ok(rendered),
            Some(other) => Ok(other.to_string()),
            None => Err(PlanError::new(
                at.clone(),
                ErrorKind::Recipe(format!(
                    "include_role {what} '{text}' uses a value only the build knows; an image's roles are chosen while planning: use a variable the recipe or the role sets"
                )),
            )),
        }
    }

    /// A dynamic include (of tasks or a role) the tag selection leaves out: unlike an import,
    /// it carries only its own tags, and a handler's runs whatever the tags.
    fn include_not_selected(&self, is_static: bool, ctx: &Ctx, tags: &[String]) -> bool {
        !is_static && !ctx.handlers && !self.opts.tags.selects(tags)
    }

    /// The context of included tasks: an import's tags are the task's, an include's only
    /// those it applies; a dynamic include under a `when` the build decides is read only if
    /// the build runs it.
    #[allow(clippy::too_many_arguments)]
    fn include_ctx(
        &mut self,
        def: &TaskDef,
        is_static: bool,
        apply_tags: &[String],
        pass: &Pass,
        ctx: &Ctx,
        tags: &[String],
        at: &Location,
    ) -> Result<Ctx> {
        let child_tags = if is_static {
            tags.to_vec()
        } else {
            union(&ctx.tags, apply_tags)
        };
        let label = def.name.as_deref();
        Ok(Ctx {
            tags: child_tags,
            loaded_at_run: ctx.loaded_at_run || !is_static && !pass.whens.is_empty(),
            ..self.child_ctx(ctx, def, pass, tags.to_vec(), label, at)?
        })
    }

    /// The tasks of a block the plan skips register what skipped tasks register: Ansible hands
    /// the block's `when` to each of its tasks and of its `always`, nested blocks too (what an
    /// include would load is never read).
    pub(super) fn register_skipped_block(&mut self, def: &TaskDef, ctx: &Ctx) {
        let Action::Block { block, always, .. } = &def.action else {
            return;
        };
        for list in [Some(*block), *always].into_iter().flatten() {
            let crate::yaml::Value::Seq(items) = &list.value else {
                continue;
            };
            for item in items {
                let role_module = |name: &str| self.ansible_module(name, ctx).is_some();
                if let Ok(inner) = crate::task::parse_task(item, &ctx.file, &role_module) {
                    self.register_skipped(&inner);
                    self.register_skipped_block(&inner, ctx);
                }
            }
        }
    }

    /// What a task the plan skips registers, as Ansible does; with a loop (whose skipped
    /// items would have passed) the list was empty.
    pub(super) fn register_skipped(&mut self, def: &TaskDef) {
        let Some(register) = &def.register else {
            return;
        };
        let skipped = match def.looping {
            None => {
                serde_json::json!({"changed": false, "skipped": true, "skip_reason": "Conditional result was False"})
            }
            Some(_) => {
                serde_json::json!({"changed": false, "skipped": true, "skipped_reason": "No items in the list", "results": []})
            }
        };
        Arc::make_mut(&mut self.facts_set).insert(register.clone(), VarValue::Raw(skipped));
    }
}

/// A block's task lists.
struct BlockParts<'n> {
    block: &'n Node,
    rescue: Option<&'n Node>,
    always: Option<&'n Node>,
}
