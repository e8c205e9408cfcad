//! Variables in precedence layers, lowest first (design.md §3):
//! role `defaults/` < `mirror.toml` < the recipe's `group_vars/all` < its `host_vars/<image>` <
//! facts < recipe `vars:` < role `vars/` < role params <
//! block and task `vars` < `set_fact`/`register` < `-e`.

use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value as Json;

/// Whether `name` can name a variable: letters, digits and `_`, not starting with a digit.
pub fn is_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A variable's value before templating.
#[derive(Debug, Clone, PartialEq)]
pub enum VarValue {
    /// A value whose strings may still be templates, resolved lazily when used.
    Raw(Json),
    /// Known only while building (a `register`ed result, a fact set from one).
    Deferred,
    /// A value the build produced (a `register`ed result): used as it is, never templated,
    /// as Ansible marks what modules return unsafe.
    Known(Json),
    /// A mapping that the build may add keys to (`ansible_facts` after a module that can
    /// return facts): its keys are known now; any other key, or the whole, only while building.
    Open(Json),
}

/// One precedence layer: names to values.
pub type Layer = IndexMap<String, VarValue>;

/// A name no variable can have: set (deferred) in a layer, it says that any name not defined
/// now may be defined by the build (a role's own module returned facts, which Ansible makes
/// variables too), so using one defers instead of failing.
pub const ANY_OTHER_NAME: &str = "*";

/// Builds a layer of raw values from a JSON object's entries.
pub fn layer_from<'a>(entries: impl IntoIterator<Item = (&'a String, &'a Json)>) -> Arc<Layer> {
    Arc::new(
        entries
            .into_iter()
            .map(|(k, v)| (k.clone(), VarValue::Raw(v.clone())))
            .collect(),
    )
}

/// The variables visible to one task: cheap to clone and extend.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Layers from lowest to highest precedence, below `set_fact`.
    base: Vec<Arc<Layer>>,
    /// `set_fact` and `register` results.
    facts_set: Arc<Layer>,
    /// `-e` on the command line, the highest.
    extra: Arc<Layer>,
}

impl Scope {
    /// A scope with the given `-e` layer on top.
    pub fn new(extra: Arc<Layer>) -> Self {
        Self {
            extra,
            ..Self::default()
        }
    }

    /// This scope with one more layer above the existing base layers.
    pub fn with_layer(&self, layer: Arc<Layer>) -> Self {
        let mut scope = self.clone();
        if !layer.is_empty() {
            scope.base.push(layer);
        }
        scope
    }

    /// This scope with a layer inserted below every existing base layer (role defaults).
    pub fn with_bottom_layer(&self, layer: Arc<Layer>) -> Self {
        let mut scope = self.clone();
        if !layer.is_empty() {
            scope.base.insert(0, layer);
        }
        scope
    }

    /// This scope with the given `set_fact`/`register` layer.
    pub fn with_facts_set(&self, facts_set: Arc<Layer>) -> Self {
        let mut scope = self.clone();
        scope.facts_set = facts_set;
        scope
    }

    /// The value of `name` by precedence, if defined anywhere.
    pub fn get(&self, name: &str) -> Option<&VarValue> {
        self.extra
            .get(name)
            .or_else(|| self.facts_set.get(name))
            .or_else(|| self.base.iter().rev().find_map(|layer| layer.get(name)))
    }

    /// Every defined name, each once.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        let layers = self.base.iter().chain([&self.facts_set, &self.extra]);
        for layer in layers {
            for name in layer.keys() {
                if name != ANY_OTHER_NAME && !names.contains(&name.as_str()) {
                    names.push(name);
                }
            }
        }
        names
    }
}

/// `from` merged into `into` as Ansible's `combine_vars(merge=True)` does: mappings key by
/// key, recursively; anything else replaced.
pub fn merge_hashes(into: &mut serde_json::Value, from: serde_json::Value) {
    match (into, from) {
        (serde_json::Value::Object(into), serde_json::Value::Object(from)) => {
            for (k, v) in from {
                match into.get_mut(&k) {
                    Some(old) => merge_hashes(old, v),
                    None => {
                        into.insert(k, v);
                    }
                }
            }
        }
        (into, from) => *into = from,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn layer(pairs: &[(&str, Json)]) -> Arc<Layer> {
        Arc::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), VarValue::Raw(v.clone())))
                .collect(),
        )
    }

    #[test]
    fn precedence_highest_wins() {
        let scope = Scope::new(layer(&[("x", json!("extra"))]))
            .with_layer(layer(&[("x", json!("recipe")), ("y", json!("recipe"))]))
            .with_layer(layer(&[("y", json!("task"))]))
            .with_bottom_layer(layer(&[("y", json!("default")), ("z", json!("default"))]));
        assert_eq!(scope.get("x"), Some(&VarValue::Raw(json!("extra"))));
        assert_eq!(scope.get("y"), Some(&VarValue::Raw(json!("task"))));
        assert_eq!(scope.get("z"), Some(&VarValue::Raw(json!("default"))));
        assert_eq!(scope.get("nope"), None);
    }

    #[test]
    fn set_fact_is_above_task_vars_below_extra() {
        let scope = Scope::new(layer(&[("a", json!(1))]))
            .with_layer(layer(&[("a", json!(2)), ("b", json!(2))]))
            .with_facts_set(layer(&[("a", json!(3)), ("b", json!(3))]));
        assert_eq!(scope.get("a"), Some(&VarValue::Raw(json!(1))));
        assert_eq!(scope.get("b"), Some(&VarValue::Raw(json!(3))));
    }
}
