//! The lazy variable context handed to minijinja.
//!
//! A variable's raw value is templated only when a template uses it, with the same context, so
//! variables may reference each other in any order (as in Ansible). A name being resolved while
//! it is already on the resolution stack is a cycle. A deferred name (known only at build time)
//! marks the whole render as deferred instead of failing it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use minijinja::value::{Enumerator, Object, ObjectRepr};
use minijinja::Value;

use super::{Templar, TemplateError};
use crate::vars::{Scope, VarValue};

#[derive(Debug, Default)]
pub(super) struct ResolveState {
    /// Names being resolved, outermost first.
    stack: Vec<String>,
    /// Names already resolved in this render; `None` means deferred.
    cache: HashMap<String, Option<Value>>,
    /// A deferred name was used.
    pub(super) deferred: bool,
    /// Names looked up but not defined, with the chain that needed each.
    pub(super) missing: Vec<(String, Vec<String>)>,
    /// An error that must win over whatever minijinja reports (a cycle, an inner undefined).
    pub(super) fatal: Option<TemplateError>,
}

/// The variables of one render, resolved on demand.
#[derive(Debug)]
pub(super) struct LazyContext {
    pub(super) scope: Scope,
    pub(super) templar: Templar,
    pub(super) state: Mutex<ResolveState>,
}

impl LazyContext {
    /// The variables of this render, where `raw` is one expression naming them (`vars`,
    /// `hostvars[...]`).
    fn variables_view(self: &Arc<Self>, raw: &serde_json::Value) -> Option<Value> {
        let expr = super::single_expression(raw.as_str()?)?.trim();
        if expr != "vars" && !expr.starts_with("hostvars[") {
            return None;
        }
        let compiled = self.templar.env.compile_expression(expr).ok()?;
        let value = compiled.eval(Value::from_dyn_object(self.clone())).ok()?;
        value.downcast_object_ref::<LazyContext>()?;
        Some(value)
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, ResolveState> {
        // A poisoned lock only means a panic elsewhere in this render; the state is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn resolve(self: &Arc<Self>, name: &str) -> Option<Value> {
        {
            let mut state = self.lock();
            if let Some(cached) = state.cache.get(name) {
                let cached = cached.clone();
                if cached.is_none() {
                    state.deferred = true;
                }
                return Some(cached.unwrap_or(Value::UNDEFINED));
            }
            if state.stack.iter().any(|n| n == name) {
                let mut chain = state.stack.clone();
                chain.push(name.to_owned());
                let chain = chain
                    .iter()
                    .skip_while(|n| n.as_str() != name)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" -> ");
                state.fatal.get_or_insert(TemplateError::Cycle(chain));
                return Some(Value::UNDEFINED);
            }
        }
        let raw = match self.scope.get(name) {
            None => {
                if name == "vars" {
                    return Some(Value::from_dyn_object(self.clone()));
                }
                // The build has one host, the image: hostvars[inventory_hostname] is `vars`.
                if name == "hostvars" {
                    let host = self
                        .scope
                        .get("inventory_hostname")
                        .and_then(|v| match v {
                            VarValue::Raw(serde_json::Value::String(s)) => Some(s.clone()),
                            _ => None,
                        })
                        .unwrap_or_else(|| "localhost".into());
                    let vars = Value::from_dyn_object(self.clone());
                    return Some(Value::from_iter([
                        (host, vars.clone()),
                        ("localhost".to_owned(), vars),
                    ]));
                }
                let mut state = self.lock();
                if self.scope.get(crate::vars::ANY_OTHER_NAME).is_some()
                    && !self.templar.is_global(name)
                {
                    // It may be a fact the build's role module returns.
                    state.deferred = true;
                    return Some(Value::UNDEFINED);
                }
                let chain = state.stack.clone();
                state.missing.push((name.to_owned(), chain));
                return None;
            }
            Some(VarValue::Deferred) => {
                let mut state = self.lock();
                state.deferred = true;
                state.cache.insert(name.to_owned(), None);
                return Some(Value::UNDEFINED);
            }
            Some(VarValue::Open(known)) => {
                // Not cached: the mapping holds this context, which must not hold it back.
                return Some(Value::from_object(OpenMapping {
                    known: known.clone(),
                    context: self.clone(),
                }));
            }
            Some(VarValue::Known(value)) => {
                let value = Value::from_serialize(value);
                self.lock()
                    .cache
                    .insert(name.to_owned(), Some(value.clone()));
                return Some(value);
            }
            Some(VarValue::Raw(raw)) => raw,
        };
        if let Some(view) = self.variables_view(raw) {
            // `all_vars: "{{ hostvars[inventory_hostname] }}"`: the variables themselves, as
            // Ansible's lazy hostvars are, not a copy (which would hold `all_vars` again).
            self.lock()
                .cache
                .insert(name.to_owned(), Some(view.clone()));
            return Some(view);
        }
        self.lock().stack.push(name.to_owned());
        let result = self.templar.render_json_in(raw, self);
        let mut state = self.lock();
        state.stack.pop();
        match result {
            Ok(Some(json)) => {
                let value = Value::from_serialize(&json);
                state.cache.insert(name.to_owned(), Some(value.clone()));
                Some(value)
            }
            Ok(None) => {
                state.deferred = true;
                state.cache.insert(name.to_owned(), None);
                Some(Value::UNDEFINED)
            }
            Err(error) => {
                state.fatal.get_or_insert(error);
                Some(Value::UNDEFINED)
            }
        }
    }
}

impl Object for LazyContext {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.resolve(key.as_str()?)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let names: Vec<Value> = self.scope.names().into_iter().map(Value::from).collect();
        Enumerator::Values(names)
    }
}

/// A mapping the build may add keys to ([`VarValue::Open`]): a known key is its value; any
/// other key, or going through the whole mapping, makes the render deferred.
#[derive(Debug)]
struct OpenMapping {
    known: serde_json::Value,
    context: Arc<LazyContext>,
}

impl Object for OpenMapping {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        match key.as_str().and_then(|k| self.known.get(k)) {
            Some(value) => Some(Value::from_serialize(value)),
            None => {
                self.context.lock().deferred = true;
                Some(Value::UNDEFINED)
            }
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.context.lock().deferred = true;
        let keys = self
            .known
            .as_object()
            .map(|m| m.keys().map(|k| Value::from(k.as_str())).collect())
            .unwrap_or_default();
        Enumerator::Values(keys)
    }
}
