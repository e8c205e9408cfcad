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

/// Marks a value as Ansible marks what it must never template again (`AnsibleUnsafe`): every
/// string of it that reads as a template is kept as text (a `{% raw %}` block), so rendering
/// the value gives the text back. A string holding a raw block already is left as it is.
pub fn mark_unsafe(raw: &mut Json) {
    match raw {
        Json::String(s) if is_template(s) && !s.contains("endraw") => {
            *s = format!("{{% raw %}}{s}{{% endraw %}}");
        }
        Json::Array(items) => items.iter_mut().for_each(mark_unsafe),
        Json::Object(map) => map.values_mut().for_each(mark_unsafe),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unsafe_value_renders_to_its_own_text() {
        let mut value =
            serde_json::json!({"a": ["foo{{ v }}", "plain"], "b": "{% raw %}{{ x }}{% endraw %}"});
        mark_unsafe(&mut value);
        assert_eq!(
            value,
            serde_json::json!({"a": ["{% raw %}foo{{ v }}{% endraw %}", "plain"], "b": "{% raw %}{{ x }}{% endraw %}"})
        );
        let env = minijinja::Environment::new();
        let text = value["a"][0].as_str().unwrap_or_default();
        assert_eq!(env.render_str(text, ()).ok().as_deref(), Some("foo{{ v }}"));
    }
}
