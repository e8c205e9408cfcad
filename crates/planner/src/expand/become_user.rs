//! `become`: the user a task runs as. Ansible's play context takes the connection variables
//! (`ansible_become`, `ansible_become_user`, `ansible_become_method`) over the keywords
//! (`become`, `become_user`, `become_method`, inherited from blocks); without `become` the task
//! runs as the connection's user, which in an image build is root.

use serde_json::Value as Json;

use crate::error::{ErrorKind, Location, PlanError, Result};
use crate::modules::types::parse_bool;
use crate::planner::Planner;
use crate::task::{Action, BecomeKeywords, TaskDef};
use crate::task_context::Ctx;
use crate::vars::Scope;

/// The methods that, in a sandbox, mean running the task's processes as the user.
const METHODS: &[&str] = &["sudo", "su"];

impl Planner<'_> {
    /// The user other than root a task becomes, if it becomes one, and whether it is a
    /// template only the build renders (a user only the build knows, as under Ansible, which
    /// renders `become_user` for each item as the task runs).
    pub(super) fn become_user(
        &self,
        keywords: &BecomeKeywords,
        scope: &Scope,
        at: &Location,
        label: Option<&str>,
    ) -> Result<Option<(String, bool)>> {
        let enabled = self.become_setting("become", &keywords.enabled, scope, at, label)?;
        let enabled = match enabled {
            None => false,
            Some(Json::Bool(b)) => b,
            Some(Json::String(s)) => parse_bool(&s).unwrap_or(false),
            Some(other) => !other.is_null(),
        };
        if !enabled {
            return Ok(None);
        }
        let method = self.become_setting("become_method", &keywords.method, scope, at, label)?;
        if let Some(method) = method.as_ref().and_then(Json::as_str) {
            if !METHODS.contains(&method) {
                return Err(unsupported(
                    at,
                    "become_method",
                    format!("'{method}' is not a method imgbuild runs; sudo and su run the task as the user in the image"),
                ));
            }
        }
        if let Some(template) = self.become_user_at_build(keywords, scope, at, label)? {
            return Ok(Some((template, true)));
        }
        let user = self.become_setting("become_user", &keywords.user, scope, at, label)?;
        let user = match user {
            None | Some(Json::Null) => "root".to_owned(),
            Some(Json::String(s)) if s.is_empty() => "root".to_owned(),
            Some(Json::String(s)) => s,
            Some(other) => other.to_string(),
        };
        Ok((user != "root").then_some((user, false)))
    }

    /// The `become_user` keyword as written, when it is a template only the build can render
    /// (the `ansible_become_user` variable, when set, is rendered now as before).
    fn become_user_at_build(
        &self,
        keywords: &BecomeKeywords,
        scope: &Scope,
        at: &Location,
        label: Option<&str>,
    ) -> Result<Option<String>> {
        if self.full(scope).get("ansible_become_user").is_some() {
            return Ok(None);
        }
        let Some(Json::String(raw)) = &keywords.user else {
            return Ok(None);
        };
        let deferred = self
            .render(&Json::String(raw.clone()), scope, at, label)?
            .is_none();
        Ok(deferred.then(|| raw.clone()))
    }

    /// One setting, rendered: the variable `ansible_<name>` when defined, else the keyword.
    /// A value only the build knows is refused.
    fn become_setting(
        &self,
        name: &str,
        keyword: &Option<Json>,
        scope: &Scope,
        at: &Location,
        label: Option<&str>,
    ) -> Result<Option<Json>> {
        let variable = format!("ansible_{name}");
        let raw = if self.full(scope).get(&variable).is_some() {
            Json::String(format!("{{{{ {variable} }}}}"))
        } else {
            match keyword {
                Some(raw) => raw.clone(),
                None => return Ok(None),
            }
        };
        match self.render(&raw, scope, at, label)? {
            Some(value) => Ok(Some(value)),
            None => Err(unsupported(
                at,
                name,
                "its value is known only while building; give it a value the plan knows".into(),
            )),
        }
    }
}

/// The `become` keywords a block or a static import hands its tasks; a dynamic include's own
/// keywords apply to the include alone, as Ansible's do.
pub(super) fn inherited(ctx: &Ctx, def: &TaskDef) -> BecomeKeywords {
    match def.action {
        Action::Include {
            is_static: false, ..
        }
        | Action::IncludeRole {
            is_static: false, ..
        } => ctx.become_keywords.clone(),
        _ => def.become_keywords.over(&ctx.become_keywords),
    }
}

fn unsupported(at: &Location, key: &str, why: String) -> PlanError {
    PlanError::new(
        at.clone(),
        ErrorKind::Unsupported {
            key: key.to_owned(),
            why,
        },
    )
}
