//! One pass of a task that runs a module: planned, or kept as a task that fails at build time
//! with the error Ansible meets when it runs. The module may be named by a template
//! (`action: "{{ ansible_facts.pkg_mgr }}"`), rendered with the task's variables as Ansible
//! renders it when the task runs.

use std::borrow::Cow;

use serde_json::{Map, Value as Json};

use crate::error::{ErrorKind, Location, PlanError, Result};
use crate::modules::ModuleSpec;
use crate::plan::Step;
use crate::planner::Planner;
use crate::task::{TaskDef, TemplatedAction};
use crate::yaml::Node;

use super::{Ctx, Pass};

/// A task's module, its arguments as written, and the node naming it.
pub(super) type Module<'d> = (&'static ModuleSpec, Cow<'d, Map<String, Json>>, &'d Node);

impl Planner<'_> {
    /// Plans `module` for one pass of `def`; an error Ansible meets when the task runs makes a
    /// task that fails at build time, where its failure is caught (`named`: the module as the
    /// task names it).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn module_pass(
        &mut self,
        def: &TaskDef,
        module: Result<Module>,
        named: &str,
        pass: &Pass,
        ctx: &Ctx,
        tags: &[String],
        at: &Location,
        out: &mut Vec<Step>,
    ) -> Result<()> {
        let (name, outcome) = match module {
            Ok((spec, args, node)) => (
                spec.name.to_owned(),
                self.emit_module(def, spec, &args, node, pass, ctx, tags, at, out),
            ),
            Err(error) => (named.to_owned(), Err(error)),
        };
        if let Err(error) = outcome {
            let whens = pass.whens.clone();
            out.push(self.fail_at_build(def, &name, ctx, &whens, tags, error)?);
        }
        Ok(())
    }

    /// The module `action` names in this pass, and its arguments.
    pub(super) fn templated_module<'d>(
        &self,
        action: &'d TemplatedAction,
        pass: &Pass,
        ctx: &Ctx,
        at: &Location,
        label: Option<&str>,
    ) -> Result<Module<'d>> {
        let rendered = self.render(&Json::String(action.name.clone()), &pass.scope, at, label)?;
        let name = match rendered {
            Some(Json::String(name)) => name.trim().to_owned(),
            Some(other) => other.to_string(),
            None => return Err(PlanError::new(
                at.clone(),
                ErrorKind::Module {
                    module: action.name.clone(),
                    message: "the module this action names is known only when the build runs (it uses a registered result); imgbuild plans which module each task runs: name it with a variable or fact known before the build".into(),
                },
            )),
        };
        let (spec, args) = action.resolve(&name, &ctx.file)?;
        Ok((spec, Cow::Owned(args), action.node))
    }
}
