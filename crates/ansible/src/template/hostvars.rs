//! `hostvars` as an image build has them, and the mappings the build may still add keys to.

use std::sync::Arc;

use minijinja::value::{Enumerator, Object, ObjectRepr};
use minijinja::Value;

use super::templar::LazyContext;
use crate::vars::VarValue;

impl LazyContext {
    /// `hostvars`: the build has one host, the image, whose variables are `vars`
    /// (`hostvars[inventory_hostname]`); `localhost`, when the image is not called so, is
    /// Ansible's implicit localhost, the controller: the same variables, with its own name and
    /// its `local` connection.
    pub(super) fn hostvars(self: &Arc<Self>) -> Value {
        hostvars(self)
    }

    /// `vars`, and `hostvars[inventory_hostname]`: the variables as a mapping (see [`VarsView`]).
    pub(super) fn vars_view(self: &Arc<Self>) -> Value {
        Value::from_object(VarsView {
            context: self.clone(),
        })
    }

    /// The render whose variables `value` is a view of, if it is one (`vars`,
    /// `hostvars[inventory_hostname]`).
    pub(super) fn of_view(value: &Value) -> Option<Arc<LazyContext>> {
        value
            .downcast_object_ref::<VarsView>()
            .map(|view| view.context.clone())
    }

    /// A name read as a key of the variables' mapping: its value as [`LazyContext::resolve`]
    /// gives it, but a name that is no variable is a key the mapping lacks (undefined, as
    /// Ansible's `hostvars[host]['x']` is), not an undefined variable the render reports, so
    /// that `| default` after it decides, as under Ansible.
    fn resolve_key(self: &Arc<Self>, name: &str) -> Option<Value> {
        let before = self.lock().missing.len();
        let found = self.resolve(name);
        if found.is_none() {
            self.lock().missing.truncate(before);
        }
        found
    }

    /// A mapping of the scope the build may add keys to (see [`OpenMapping`]).
    pub(super) fn open_mapping(self: &Arc<Self>, known: &serde_json::Value) -> Value {
        Value::from_object(OpenMapping {
            known: known.clone(),
            context: self.clone(),
        })
    }
}

fn hostvars(context: &Arc<LazyContext>) -> Value {
    let host = context
        .scope
        .get("inventory_hostname")
        .and_then(|v| match v {
            VarValue::Raw(serde_json::Value::String(s))
            | VarValue::Known(serde_json::Value::String(s)) => Some(s.clone()),
            _ => None,
        })
        .unwrap_or_else(|| "localhost".into());
    let vars = context.vars_view();
    let localhost = match host.as_str() {
        "localhost" => vars.clone(),
        _ => Value::from_object(ImplicitLocalhost {
            context: context.clone(),
        }),
    };
    Value::from_iter([(host, vars), ("localhost".to_owned(), localhost)])
}

/// Ansible's implicit localhost seen through `hostvars`: the image's variables under its own
/// name and connection (what `ansible-playbook` gives `localhost` when no inventory names it).
#[derive(Debug)]
struct ImplicitLocalhost {
    context: Arc<LazyContext>,
}

impl ImplicitLocalhost {
    const OWN: [(&'static str, &'static str); 3] = [
        ("ansible_connection", "local"),
        ("inventory_hostname", "localhost"),
        ("inventory_hostname_short", "localhost"),
    ];
}

impl Object for ImplicitLocalhost {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let name = key.as_str()?;
        match Self::OWN.iter().find(|(own, _)| *own == name) {
            Some((_, value)) => Some(Value::from(*value)),
            None => self.context.resolve_key(name),
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let mut names: Vec<Value> = Self::OWN.iter().map(|(n, _)| Value::from(*n)).collect();
        let theirs = self.context.scope.names();
        let own = |n: &&str| Self::OWN.iter().any(|(o, _)| o == n);
        names.extend(theirs.into_iter().filter(|n| !own(n)).map(Value::from));
        Enumerator::Values(names)
    }
}

/// The variables seen as a mapping (`vars`, `hostvars[inventory_hostname]`): a key is a
/// variable's value, resolved as the render reads it.
#[derive(Debug)]
struct VarsView {
    context: Arc<LazyContext>,
}

impl Object for VarsView {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.context.resolve_key(key.as_str()?)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let names = self.context.scope.names();
        Enumerator::Values(names.into_iter().map(Value::from).collect())
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
