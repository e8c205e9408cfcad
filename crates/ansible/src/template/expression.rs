//! Telling templates from plain text, and a single `{{ expression }}` from a larger template.

use serde_json::Value as Json;

/// Whether `s` holds any Jinja syntax.
pub fn is_template(s: &str) -> bool {
    s.contains("{{") || s.contains("{%") || s.contains("{#")
}

/// The inner expression of a string that is exactly one `{{ ... }}`.
pub fn single_expression(s: &str) -> Option<&str> {
    let inner = s.strip_prefix("{{")?.strip_suffix("}}")?;
    let inner = inner.strip_prefix('-').unwrap_or(inner);
    let inner = inner.strip_suffix('-').unwrap_or(inner);
    if inner.contains("{{") || inner.contains("}}") || inner.contains("{%") || inner.contains("{#")
    {
        return None;
    }
    Some(inner)
}

/// Whether any string inside `raw` is a template.
pub fn contains_template(raw: &Json) -> bool {
    match raw {
        Json::String(s) => is_template(s),
        Json::Array(items) => items.iter().any(contains_template),
        Json::Object(map) => map.values().any(contains_template),
        _ => false,
    }
}
