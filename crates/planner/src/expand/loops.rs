//! A task's passes: one per item of a loop known at plan time (lookup loops resolved here),
//! one with a build-time loop, or the task itself.

use std::sync::Arc;

use serde_json::Value as Json;

use crate::error::{ErrorKind, Location, PlanError, Result};
use crate::plan::LoopItem;
use crate::planner::Planner;
use crate::task::{Action, LoopDef, TaskDef};
use crate::vars::{Layer, Scope, VarValue};

use super::{Ctx, Pass};

impl Planner<'_> {
    /// The passes of a task: one per loop item (None where `when` folds to false).
    pub(super) fn passes(
        &mut self,
        def: &TaskDef,
        scope: &Scope,
        ctx: &Ctx,
        at: &Location,
    ) -> Result<Vec<Option<Pass>>> {
        let Some(looping) = &def.looping else {
            return Ok(vec![self.pass(def, scope.clone(), ctx, None, None, at)?]);
        };
        let rendered = match self.loop_value(def, looping, scope, ctx, at) {
            Ok(rendered) => rendered,
            // Ansible keeps a loop that names an undefined variable and decides `when` first:
            // a task whose `when` is false without the loop is skipped, its loop never used.
            Err(error) if names_undefined(&error.kind) => {
                return match self.pass(def, scope.clone(), ctx, None, None, at) {
                    Ok(None) => Ok(vec![None]),
                    _ => Err(error),
                }
            }
            Err(error) => return Err(error),
        };
        let Some(rendered) = rendered else {
            let mut deferred = Layer::new();
            deferred.insert(def.loop_var.clone(), VarValue::Deferred);
            if let Some(index_var) = &def.index_var {
                deferred.insert(index_var.clone(), VarValue::Deferred);
            }
            if def.loop_extended {
                deferred.insert("ansible_loop".into(), VarValue::Deferred);
            }
            let loop_scope = scope.with_layer(Arc::new(deferred));
            let over = Some(deferred_query(looping).unwrap_or_else(|| looping.value.clone()));
            return Ok(vec![self.pass(def, loop_scope, ctx, None, over, at)?]);
        };
        let items = loop_items(looping.keyword, rendered, at)?;
        self.item_passes(def, items, scope, ctx, at)
    }

    /// Whether `def` loops over a list the plan knows to be empty: the task never runs.
    pub(super) fn loops_over_nothing(
        &mut self,
        def: &TaskDef,
        scope: &Scope,
        ctx: &Ctx,
        at: &Location,
    ) -> bool {
        let Some(looping) = &def.looping else {
            return false;
        };
        matches!(
            self.loop_value(def, looping, scope, ctx, at),
            Ok(Some(Json::Array(items))) if items.is_empty()
        )
    }

    /// The value a loop goes over: its list rendered, a lookup loop's items; `None` when only
    /// the build knows it.
    fn loop_value(
        &mut self,
        def: &TaskDef,
        looping: &LoopDef,
        scope: &Scope,
        ctx: &Ctx,
        at: &Location,
    ) -> Result<Option<Json>> {
        let label = def.name.as_deref();
        let lookup = matches!(
            looping.keyword,
            "with_dict"
                | "with_together"
                | "with_nested"
                | "with_subelements"
                | "with_first_found"
                | "with_fileglob"
        );
        let rendered = self.render(&looping.value, scope, at, label)?;
        let keyword = match &looping.plugin {
            Some(plugin) => format!("with_{plugin}"),
            None => looping.keyword.to_owned(),
        };
        let Some(rendered) = rendered else {
            if (lookup || looping.plugin.is_some()) && deferred_query(looping).is_none() {
                return Err(PlanError::new(
                    at.clone(),
                    ErrorKind::Recipe(format!(
                        "{keyword} over a value only the build knows is not supported; use loop: with a filter (dict2items, zip, subelements)"
                    )),
                ));
            }
            return Ok(None);
        };
        if let Some(plugin) = &looping.plugin {
            return Ok(Some(Json::Array(
                self.query_items(plugin, rendered, scope, at, label)?,
            )));
        }
        if !lookup {
            return Ok(Some(rendered));
        }
        let module = match &def.action {
            Action::Module { spec, .. } => spec.name,
            _ => "",
        };
        let items = self.lookup_items(looping.keyword, rendered, module, ctx, at)?;
        Ok(Some(Json::Array(items)))
    }

    /// One pass per item (a skipped one where `when` folds to false and the task registers).
    fn item_passes(
        &mut self,
        def: &TaskDef,
        items: Vec<Json>,
        scope: &Scope,
        ctx: &Ctx,
        at: &Location,
    ) -> Result<Vec<Option<Pass>>> {
        let label = def.name.as_deref();
        let length = items.len();
        let mut passes = Vec::with_capacity(length);
        // Ansible marks a lookup's items unsafe: the loop variable is used as it is, never
        // templated again.
        let from_lookup = def.looping.as_ref().is_some_and(|l| l.keyword != "loop");
        for (index, value) in items.iter().cloned().enumerate() {
            let vars = crate::plan::loop_vars(
                &def.loop_var,
                def.index_var.as_deref(),
                &items,
                index,
                def.loop_extended,
            );
            let layer: Layer = vars
                .into_iter()
                .map(|(k, v)| match from_lookup && k == def.loop_var {
                    true => (k, VarValue::Known(v)),
                    false => (k, VarValue::Raw(v)),
                })
                .collect();
            let item_scope = scope.with_layer(Arc::new(layer));
            let label = match &def.loop_label {
                Some(raw) => match self.render(raw, &item_scope, at, label)? {
                    Some(Json::String(s)) => Some(s),
                    Some(other) => Some(other.to_string()),
                    None => None,
                },
                None => None,
            };
            let item = LoopItem {
                var: def.loop_var.clone(),
                value,
                index,
                length,
                index_var: def.index_var.clone(),
                label,
                extended: def
                    .loop_extended
                    .then(|| crate::plan::extended_loop(&items, index)),
                skipped: false,
                from_lookup,
            };
            let skipped_item = def.register.is_some().then(|| LoopItem {
                skipped: true,
                ..item.clone()
            });
            match self.pass(def, item_scope.clone(), ctx, Some(item), None, at)? {
                Some(pass) => passes.push(Some(pass)),
                // Ansible registers a loop's skipped items too (`results[i].skipped`).
                None => passes.push(skipped_item.map(|item| Pass {
                    scope: item_scope,
                    whens: vec!["False".into()],
                    item: Some(item),
                    loop_over: None,
                })),
            }
        }
        Ok(passes)
    }

    /// `with_<plugin>: terms`: the items of `query('<plugin>', *terms)`, as Ansible's lookup
    /// loops give them.
    fn query_items(
        &self,
        plugin: &str,
        terms: Json,
        scope: &Scope,
        at: &Location,
        label: Option<&str>,
    ) -> Result<Vec<Json>> {
        if !plugin
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            return Err(PlanError::new(
                at.clone(),
                ErrorKind::Recipe(format!("with_{plugin}: '{plugin}' is not a lookup name")),
            ));
        }
        let terms = match terms {
            Json::Array(items) => items,
            other => vec![other],
        };
        let names: Vec<String> = (0..terms.len())
            .map(|i| format!("__imgbuild_term_{i}"))
            .collect();
        let layer = crate::vars::layer_from(names.iter().zip(terms.iter()));
        let call = Json::String(format!("{{{{ query('{plugin}', {}) }}}}", names.join(", ")));
        match self.render(&call, &scope.with_layer(layer), at, label)? {
            Some(Json::Array(items)) => Ok(items),
            Some(other) => Ok(vec![other]),
            None => Err(PlanError::new(
                at.clone(),
                ErrorKind::Recipe(format!(
                    "with_{plugin} uses a value only the build knows; use loop: with a filter"
                )),
            )),
        }
    }

    pub(super) fn pass(
        &mut self,
        def: &TaskDef,
        scope: Scope,
        ctx: &Ctx,
        item: Option<LoopItem>,
        loop_over: Option<Json>,
        at: &Location,
    ) -> Result<Option<Pass>> {
        let mut whens = ctx.when.clone();
        for cond in &def.when {
            match self.condition(cond, &scope, at, def.name.as_deref())? {
                Some(true) => {}
                Some(false) => return Ok(None),
                None => whens.push(match cond {
                    Json::String(s) => s.clone(),
                    other => other.to_string(),
                }),
            }
        }
        Ok(Some(Pass {
            scope,
            whens,
            item,
            loop_over,
        }))
    }
}

/// The items of a loop's rendered value: a list (`with_items` flattens one level and takes a
/// single string or nothing too).
/// A lookup loop over a value only the build knows, as the loop the build runs:
/// `with_<plugin>: "{{ expr }}"` is `query('<plugin>', *terms)` with the list's items as the
/// terms (any other value as the one term), and a list written out (`with_together: ["{{ a }}",
/// "{{ b }}"]`) gives its items as the terms, as Ansible calls the lookup. `None` where an item
/// is text with a template inside, the lookup reads the machine running the build, or it is
/// `list` (the rendered list itself). `with_items` goes through the `items` lookup too, which
/// flattens one level as Ansible's does (`with_items: ["{{ registered.results }}"]`).
fn deferred_query(looping: &LoopDef) -> Option<Json> {
    let plugin = match &looping.plugin {
        Some(plugin) => plugin.as_str(),
        None => looping.keyword.strip_prefix("with_")?,
    };
    if matches!(plugin, "list" | "first_found" | "fileglob") {
        return None;
    }
    let terms = match &looping.value {
        Json::Array(items) => {
            let terms: Option<Vec<String>> = items.iter().map(term).collect();
            terms?.join(", ")
        }
        value => {
            let expr = crate::template::single_expression(value.as_str()?)?.trim();
            format!(
                "*(({expr}) if ({expr}) is not string and ({expr}) is not mapping and ({expr}) is iterable else [({expr})])"
            )
        }
    };
    Some(Json::String(format!(
        "{{{{ query('{plugin}', {terms}) }}}}"
    )))
}

/// One term of a written-out list as an expression: a template's own, or the value itself.
fn term(item: &Json) -> Option<String> {
    match item.as_str() {
        Some(text) if crate::template::is_template(text) => Some(format!(
            "({})",
            crate::template::single_expression(text)?.trim()
        )),
        _ if crate::template::contains_template(item) => None,
        _ => serde_json::to_string(item).ok(),
    }
}

fn loop_items(keyword: &str, rendered: Json, at: &Location) -> Result<Vec<Json>> {
    Ok(match rendered {
        Json::Array(items) if keyword == "with_items" => items
            .into_iter()
            .flat_map(|item| match item {
                Json::Array(inner) => inner,
                other => vec![other],
            })
            .collect(),
        Json::Array(items) => items,
        Json::Null if keyword == "with_items" => Vec::new(),
        scalar @ Json::String(_) if keyword == "with_items" => vec![scalar],
        // Ansible's words: the task fails with them when it runs.
        _ if keyword == "with_list" => {
            return Err(PlanError::new(
                at.clone(),
                ErrorKind::Lookup("with_list expects a list".into()),
            ))
        }
        other => {
            return Err(PlanError::new(
                at.clone(),
                ErrorKind::WrongType {
                    what: keyword.into(),
                    expected: "a list",
                    found: crate::modules::types::json_type(&other),
                },
            ))
        }
    })
}

/// Whether an error is an undefined variable (what Ansible keeps until it has decided `when`).
fn names_undefined(kind: &ErrorKind) -> bool {
    match kind {
        ErrorKind::Undefined { .. } | ErrorKind::HostFact { .. } => true,
        ErrorKind::InTask { inner, .. } => names_undefined(inner),
        ErrorKind::Template { message, .. } => message.contains("undefined"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_lookup_loop_over_a_build_time_value_becomes_a_query_the_build_runs() {
        let looping = LoopDef {
            keyword: "with_indexed_items",
            value: json!("{{ listed.stdout_lines }}"),
            plugin: Some("indexed_items".into()),
        };
        let query = deferred_query(&looping).expect("one expression");
        assert!(
            query
                .as_str()
                .is_some_and(|q| q.starts_with("{{ query('indexed_items', *((listed.stdout_lines)")),
            "{query}"
        );
        let items = LoopDef {
            keyword: "with_items",
            value: json!(["{{ x.results }}"]),
            plugin: None,
        };
        // The items lookup flattens one level: the list inside the list is the items.
        assert_eq!(
            deferred_query(&items),
            Some(json!("{{ query('items', (x.results)) }}"))
        );
        let list = LoopDef {
            keyword: "with_list",
            value: json!("{{ x }}"),
            plugin: None,
        };
        assert_eq!(deferred_query(&list), None);
        let written_out = LoopDef {
            value: json!(["{{ a.results }}", "b", 1]),
            ..looping
        };
        assert_eq!(
            deferred_query(&written_out),
            Some(json!("{{ query('indexed_items', (a.results), \"b\", 1) }}"))
        );
        let inside = LoopDef {
            value: json!(["x{{ a }}"]),
            ..written_out
        };
        assert_eq!(deferred_query(&inside), None);
    }
}
