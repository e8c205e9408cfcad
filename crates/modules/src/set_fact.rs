//! `set_fact`: define variables for the rest of the build.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::Flag;

/// Parameters of `set_fact`: any variable names, and `cacheable`.
#[derive(Debug, Deserialize, Serialize)]
pub struct SetFactParams {
    /// Accepted for compatibility (facts live for one build).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cacheable: Option<Flag>,
    /// The variables.
    #[serde(flatten)]
    pub facts: IndexMap<String, serde_json::Value>,
}

impl Params for SetFactParams {
    fn check(&self) -> Result<(), String> {
        if self.facts.is_empty() {
            return Err("set_fact needs at least one variable".into());
        }
        for name in self.facts.keys() {
            // A name only the build knows is checked when the build renders it.
            if !ansible::vars::is_identifier(name) && !ansible::template::is_template(name) {
                return Err(format!(
                    "'{name}' is not a valid variable name (letters, digits, _)"
                ));
            }
        }
        Ok(())
    }
}

/// Checks the variables and, as Ansible's set_fact does (without jinja2_native), turns the
/// texts `true`/`false`/`yes`/`no` (any case) into booleans. A template stays as it is until
/// the build renders it, then comes through here again.
fn normalize(args: serde_json::Value) -> Result<serde_json::Value, String> {
    let mut value = super::spec::normalize_with::<SetFactParams>(args)?;
    if let serde_json::Value::Object(map) = &mut value {
        for (_, fact) in map.iter_mut().filter(|(name, _)| *name != "cacheable") {
            if let Some(text) = fact.as_str().filter(|t| !ansible::template::is_template(t)) {
                match text.to_ascii_lowercase().as_str() {
                    "true" | "yes" => *fact = serde_json::Value::Bool(true),
                    "false" | "no" => *fact = serde_json::Value::Bool(false),
                    _ => {}
                }
            }
        }
    }
    Ok(value)
}

/// `set_fact`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "set_fact",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize,
    plan_time: PlanTime::SetFacts,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
