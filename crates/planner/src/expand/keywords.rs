//! Task keywords the planner folds or keeps for the build: `when`, `changed_when`/
//! `failed_when`/`until` expressions, `environment`, `ignore_errors`, and `notify` names.

use indexmap::IndexMap;
use serde_json::Value as Json;

use super::{and_all, Ctx, Pass, Planner};
use crate::error::{ErrorKind, Location, PlanError, Result};
use crate::modules::types::parse_bool;
use crate::template::Condition;
use crate::vars::Scope;

impl Planner<'_> {
    /// `notify:` names rendered, as Ansible renders them (`Restart {{ service }}`), and noted
    /// for the check that each names a handler. A name that uses a build-time result stays a
    /// template: the build renders it, and checks it, when the task changes something.
    pub(super) fn notify_names(
        &mut self,
        names: &[String],
        pass: &Pass,
        at: &Location,
        task: Option<&str>,
    ) -> Result<Vec<String>> {
        let mut rendered = Vec::new();
        for name in names {
            let name = match self.templar.render_text(name, &self.full(&pass.scope)) {
                Ok(Some(name)) => name,
                Ok(None) => {
                    rendered.push(name.clone());
                    continue;
                }
                Err(e) => return Err(self.template_error(at, task, e)),
            };
            self.notified.push((name.clone(), at.clone()));
            rendered.push(name);
        }
        Ok(rendered)
    }

    /// Evaluates one `when:` entry; `Ok(None)` when only the build can tell.
    pub(crate) fn condition(
        &mut self,
        cond: &Json,
        scope: &Scope,
        at: &Location,
        task: Option<&str>,
    ) -> Result<Option<bool>> {
        let expr = match cond {
            Json::Bool(b) => return Ok(Some(*b)),
            Json::String(s) => s,
            other => return Ok(Some(!other.is_null())),
        };
        match self
            .templar
            .condition(expr, &self.full(scope))
            .map_err(|e| self.template_error(at, task, e))?
        {
            Condition::Known(b) => Ok(Some(b)),
            Condition::Deferred => Ok(None),
            Condition::NotBoolean(value, truth) => {
                // ansible-core 2.14 takes Jinja2's truth of the value; 2.19 refuses it.
                self.warn(
                    at,
                    format!(
                        "'when: {expr}' gave {value}, not a boolean: taken as {truth} (ansible-core 2.14; 2.19 refuses it); compare explicitly, for example '| bool' or '| length > 0'"
                    ),
                );
                Ok(Some(truth))
            }
        }
    }

    /// Build-time expressions (`changed_when`, `failed_when`, `until`) joined into one.
    pub(super) fn runtime_expression(
        &self,
        conds: &[Json],
        at: &Location,
    ) -> Result<Option<String>> {
        let mut parts = Vec::new();
        for cond in conds {
            let text = match cond {
                Json::Bool(b) => b.to_string(),
                Json::String(s) => {
                    self.templar
                        .check_expression(s)
                        .map_err(|e| self.template_error(at, None, e))?;
                    s.clone()
                }
                other => other.to_string(),
            };
            parts.push(text);
        }
        Ok(and_all(&parts))
    }

    pub(crate) fn environment(
        &self,
        ctx: &Ctx,
        env: Option<&Json>,
        scope: &Scope,
        at: &Location,
        label: Option<&str>,
    ) -> Result<Vec<IndexMap<String, Json>>> {
        let mut chain = ctx.environment.clone();
        let Some(env) = env else { return Ok(chain) };
        let rendered = self
            .render(env, scope, at, label)?
            .unwrap_or_else(|| env.clone());
        match rendered {
            Json::Object(map) => {
                chain.push(map.into_iter().collect());
                Ok(chain)
            }
            Json::Null => Ok(chain),
            other => Err(PlanError::new(
                at.clone(),
                ErrorKind::WrongType {
                    what: "environment".into(),
                    expected: "a mapping of variable names to values",
                    found: crate::modules::types::json_type(&other),
                },
            )),
        }
    }

    /// A boolean keyword (`check_mode`, `diff`) of the task, or the one its blocks hand it,
    /// rendered; none when neither sets it.
    pub(super) fn bool_keyword(
        &self,
        name: &str,
        own: &Option<Json>,
        inherited: &Option<Json>,
        pass: &Pass,
        def: &crate::task::TaskDef,
        at: &Location,
    ) -> Result<Option<bool>> {
        let Some(raw) = own.as_ref().or(inherited.as_ref()) else {
            return Ok(None);
        };
        match self.render(raw, &pass.scope, at, def.name.as_deref())? {
            Some(Json::Bool(b)) => Ok(Some(b)),
            Some(Json::String(s)) => Ok(Some(parse_bool(&s).unwrap_or(false))),
            Some(Json::Null) => Ok(None),
            Some(other) => Ok(Some(other.as_f64().is_some_and(|n| n != 0.0))),
            None => Err(PlanError::new(
                at.clone(),
                ErrorKind::Unsupported {
                    key: name.into(),
                    why: "its value is known only while building; give it a value the plan knows"
                        .into(),
                },
            )),
        }
    }

    /// `async` on a task whose action plugin does not take it: Ansible's action fails the task
    /// when it runs, before anything else (ActionBase.run). Otherwise whether the task is
    /// started in the background (`async` with `poll: 0`).
    pub(super) fn refuse_async(
        &self,
        def: &crate::task::TaskDef,
        module: &str,
        scope: &Scope,
        at: &Location,
    ) -> Result<bool> {
        let Some(raw) = &def.async_val else {
            return Ok(false);
        };
        let seconds = |raw: &Json| -> Result<f64> {
            Ok(match self.render(raw, scope, at, def.name.as_deref())? {
                Some(Json::Number(n)) => n.as_f64().unwrap_or(0.0),
                Some(Json::String(s)) => s.trim().parse().unwrap_or(0.0),
                _ => 0.0,
            })
        };
        if seconds(raw)? == 0.0 {
            return Ok(false);
        }
        if !crate::modules::action_supports_async(module) {
            return Err(PlanError::new(
                at.clone(),
                ErrorKind::ActionRefuses("async is not supported for this task.".into()),
            ));
        }
        // Ansible polls every 15 seconds unless told otherwise; `poll: 0` starts the job.
        match &def.poll_val {
            Some(poll) => Ok(seconds(poll)? == 0.0),
            None => Ok(false),
        }
    }

    pub(super) fn ignore_errors(
        &self,
        ctx: &Ctx,
        value: Option<&Json>,
        scope: &Scope,
        at: &Location,
        label: Option<&str>,
    ) -> Result<Option<Json>> {
        let Some(value) = value else {
            return Ok(ctx.ignore_errors.clone());
        };
        match self.render(value, scope, at, label)? {
            None => Ok(Some(value.clone())),
            Some(Json::Bool(b)) => Ok(b.then_some(Json::Bool(true))),
            Some(Json::String(s)) => match parse_bool(&s) {
                Some(b) => Ok(b.then_some(Json::Bool(true))),
                None => Err(PlanError::new(
                    at.clone(),
                    ErrorKind::WrongType {
                        what: "ignore_errors".into(),
                        expected: "a boolean",
                        found: "a string",
                    },
                )),
            },
            Some(other) => Err(PlanError::new(
                at.clone(),
                ErrorKind::WrongType {
                    what: "ignore_errors".into(),
                    expected: "a boolean",
                    found: crate::modules::types::json_type(&other),
                },
            )),
        }
    }
}
