//! Errors Ansible meets only when a task runs. A task whose failure is caught (inside a block
//! with `rescue`, with `ignore_errors` or `failed_when`) or that runs only if a `when` the build
//! decides holds, and whose arguments, loop or condition do not render, is not refused: the plan
//! keeps it as a task that fails at build time with the same message, as the task would under
//! `ansible-playbook`. Everywhere else such an error stays a plan error, found before anything
//! runs.

use crate::error::{ErrorKind, Location, PlanError};
use crate::plan::{PlannedTask, Step};
use crate::planner::Planner;
use crate::task::{Action, TaskDef};
use crate::vars::Scope;

use super::{and_all, Ctx, Pass};

/// Whether Ansible would meet `kind` only when the task runs (a template, a variable, a
/// module's arguments), not when it reads the role.
fn met_at_run(kind: &ErrorKind) -> bool {
    match kind {
        ErrorKind::Template { .. }
        | ErrorKind::Undefined { .. }
        | ErrorKind::Module { .. }
        | ErrorKind::Lookup(_)
        | ErrorKind::ActionRefuses(_)
        | ErrorKind::WrongType { .. }
        | ErrorKind::MissingFile { .. } => true,
        ErrorKind::InTask { inner, .. } => met_at_run(inner),
        _ => false,
    }
}

/// The message the task fails with at build time: what Ansible's run reports, the plugin's own
/// words (a lookup's, a filter's) without the plan's framing.
fn message_at_run(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::InTask { inner, .. } => message_at_run(inner),
        // Ansible's argument validation names no module.
        ErrorKind::Module { message, .. } => message.clone(),
        // Ansible's words for a task's undefined variable, which roles test for.
        ErrorKind::Undefined { name, .. } => format!(
            "The task includes an option with an undefined variable. The error was: '{name}' is undefined"
        ),
        ErrorKind::Template { message, .. } => {
            let message = message
                .strip_prefix("invalid operation: ")
                .unwrap_or(message);
            // The marker a lookup's own failure carries (template/lookups.rs) is not its words.
            message
                .strip_suffix(": the lookup failed")
                .unwrap_or(message)
                .to_owned()
        }
        other => other.to_string(),
    }
}

impl Planner<'_> {
    /// Whether a run of `def` that fails is caught, or may never happen: `rescue` around it,
    /// `ignore_errors`, `failed_when`, or a `when` only the build decides.
    pub(super) fn leaves_failure_to_build(
        &self,
        ctx: &Ctx,
        def: &TaskDef,
        whens: &[String],
    ) -> bool {
        let ignored = |v: &Option<serde_json::Value>| {
            !matches!(v, None | Some(serde_json::Value::Bool(false)))
        };
        ctx.rescued
            || !whens.is_empty()
            || !def.failed_when.is_empty()
            || ignored(&def.ignore_errors)
            || ignored(&ctx.ignore_errors)
    }

    /// `error` as a task that fails when the build runs it, if Ansible would meet the error
    /// only then and the task's failure is left to the build; otherwise the error.
    pub(super) fn fail_at_build(
        &mut self,
        def: &TaskDef,
        module: &str,
        ctx: &Ctx,
        whens: &[String],
        tags: &[String],
        error: PlanError,
    ) -> Result<Step, PlanError> {
        if !met_at_run(&error.kind) || !self.leaves_failure_to_build(ctx, def, whens) {
            return Err(error);
        }
        let at = Location::new(&ctx.file, def.line);
        self.warn(
            &at,
            format!("left to the build, where the task fails (its failure is caught or it may not run): {error}"),
        );
        Ok(Step::Task(Box::new(PlannedTask {
            role: ctx.layer.to_string(),
            name: def.name.clone().unwrap_or_else(|| module.to_owned()),
            module: module.to_owned(),
            args: serde_json::Value::Object(serde_json::Map::new()),
            tags: tags.to_vec(),
            when: and_all(whens),
            source: at.to_string(),
            register: def.register.clone(),
            ignore_errors: def
                .ignore_errors
                .clone()
                .or_else(|| ctx.ignore_errors.clone()),
            failed_when: self
                .runtime_expression(&def.failed_when, &at)
                .ok()
                .flatten(),
            fails: Some(message_at_run(&error.kind)),
            ..PlannedTask::default()
        })))
    }

    /// A task of a file Ansible reads only when the build runs its include, naming a module no
    /// one has: the task that fails there with Ansible's words, when it runs.
    pub(super) fn unread_task(
        &mut self,
        node: &crate::yaml::Node,
        ctx: &Ctx,
        error: PlanError,
    ) -> Result<Step, PlanError> {
        let ErrorKind::UnknownKey { key, .. } = &error.kind else {
            return Err(error);
        };
        let message = format!("couldn't resolve module/action '{key}'. This often indicates a misspelling, missing collection, or incorrect module path.");
        let at = Location::new(&ctx.file, node.line);
        self.warn(
            &at,
            format!("left to the build, where the task fails if its include runs (its file is read only then, as Ansible reads it): {error}"),
        );
        Ok(Step::Task(Box::new(PlannedTask {
            role: ctx.layer.to_string(),
            name: node
                .get("name")
                .and_then(|n| n.as_str())
                .map_or_else(|| key.clone(), str::to_owned),
            module: key.clone(),
            args: serde_json::Value::Object(serde_json::Map::new()),
            tags: ctx.tags.clone(),
            when: and_all(&ctx.when),
            source: at.to_string(),
            fails: Some(message),
            ..PlannedTask::default()
        })))
    }

    /// The task's passes; where they fail with an error Ansible meets only when the task runs
    /// and its failure is left to the build, the task that fails there instead (`None`).
    pub(super) fn passes_or_failing_task(
        &mut self,
        def: &TaskDef,
        scope: &Scope,
        ctx: &Ctx,
        at: &Location,
        tags: &[String],
        out: &mut Vec<Step>,
    ) -> Result<Option<Vec<Option<Pass>>>, PlanError> {
        match (self.passes(def, scope, ctx, at), &def.action) {
            (Ok(passes), _) => Ok(Some(passes)),
            (Err(error), Action::Module { spec, .. }) => {
                // The task's own `when` may be what failed: only the enclosing ones decide.
                let whens = ctx.when.clone();
                out.push(self.fail_at_build(def, spec.name, ctx, &whens, tags, error)?);
                if let Some(register) = &def.register {
                    std::sync::Arc::make_mut(&mut self.facts_set)
                        .insert(register.clone(), crate::vars::VarValue::Deferred);
                }
                Ok(None)
            }
            (Err(error), _) => Err(error),
        }
    }
}
