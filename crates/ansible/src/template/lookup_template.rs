//! `lookup('template', name, ...)`: a template of the role rendered with the task's variables
//! (and `template_vars=`), as ansible-core 2.14 renders it: looked for in `templates/` first,
//! its `{% include %}`s found beside it and then in the role's folders, other delimiters on
//! request, and the text turned into a list or mapping where it reads as one
//! (`convert_data=True`, the default).

use std::path::{Path, PathBuf};

use minijinja::value::Kwargs;
use minijinja::{Environment, Error, ErrorKind, UndefinedBehavior, Value};

use super::file_options::{Delimiter, FileOptions};
use super::lookup_state::{find_file, include_loader, lookup_failed, record_read, search_dirs};
use super::templar::current_render;

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// Where the template `name` is: the role's `templates/` first, then where lookups look.
fn locate(name: &str) -> Result<Option<PathBuf>, Error> {
    let (root, dirs) = search_dirs();
    if !name.starts_with('/') && !name.split('/').any(|c| c == "..") {
        for dir in dirs.iter().filter(|d| d.ends_with("templates")) {
            let candidate = dir.join(name);
            if root.join(&candidate).is_file() {
                record_read(candidate.clone());
                return Ok(Some(candidate));
            }
        }
    }
    find_file(name)
}

/// The delimiters `lookup('template')` takes (`variable_start_string='[%'`, ...).
fn delimiters(kwargs: &Kwargs) -> Result<FileOptions, Error> {
    let mut options = FileOptions::default();
    for name in [
        "variable_start_string",
        "variable_end_string",
        "comment_start_string",
        "comment_end_string",
    ] {
        if let (Some(which), Some(text)) = (
            Delimiter::from_option(name),
            kwargs.get::<Option<String>>(name)?,
        ) {
            options.delimiters.push((which, text));
        }
    }
    Ok(options)
}

/// Ansible's `ansible_eval_concat`: a text that reads as a Python list, mapping or boolean
/// literal is that value; anything else stays text.
pub(super) fn convert_data(text: String) -> Value {
    if !(text.starts_with('{') || text.starts_with('[') || text == "True" || text == "False") {
        return Value::from(text);
    }
    let mut env = Environment::empty();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    let literal = env
        .compile_expression(&text)
        .ok()
        .filter(|e| e.undeclared_variables(false).is_empty())
        .and_then(|e| e.eval(()).ok());
    literal.unwrap_or_else(|| Value::from(text))
}

fn render_one(name: &str, extra: Option<&Value>, kwargs: &Kwargs) -> Result<Value, Error> {
    let path = locate(name)?.ok_or_else(|| {
        lookup_failed(format!(
            "the template file {name} could not be found for the lookup"
        ))
    })?;
    let (root, _) = search_dirs();
    let text = std::fs::read_to_string(root.join(&path))
        .map_err(|e| invalid(format!("lookup('template', '{name}'): {e}")))?;
    let options = delimiters(kwargs)?;
    let Some((templar, scope)) = current_render() else {
        return Err(invalid("lookup('template') outside a render"));
    };
    // template_vars= are seen over the task's variables.
    let scope = match extra.and_then(|v| serde_json::to_value(v).ok()) {
        Some(serde_json::Value::Object(map)) => {
            scope.with_layer(crate::vars::layer_from(map.iter()))
        }
        _ => scope,
    };
    let beside = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let templar = templar.with_loader(include_loader(beside));
    match templar.render_with_options(&text, &scope, &options) {
        Ok(Some(rendered)) => Ok(Value::from(rendered)),
        Ok(None) => Err(invalid(format!(
            "lookup('template', '{name}') uses a value only the build knows; use the template module"
        ))),
        Err(e) => Err(invalid(format!("lookup('template', '{name}'): {e}"))),
    }
}

/// `lookup('template', name, ..., template_vars=, convert_data=, *_string=)`.
pub fn template(names: &[String], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let extra: Option<Value> = kwargs.get("template_vars")?;
    let convert: bool = kwargs.get::<Option<bool>>("convert_data")?.unwrap_or(true);
    let _: Option<bool> = kwargs.get("jinja2_native")?;
    names
        .iter()
        .map(|name| {
            let rendered = render_one(name, extra.as_ref(), kwargs)?;
            Ok(match rendered.as_str() {
                Some(text) if convert => convert_data(text.to_owned()),
                _ => rendered,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn convert_data_reads_python_literals_only() {
        let v = convert_data("{\"foo\": \"bar\", 'n': [1, True, None]}".into());
        assert_eq!(v.get_attr("foo").ok(), Some(Value::from("bar")));
        assert_eq!(convert_data("True".into()), Value::from(true));
        let text = convert_data("[ x ]".into());
        assert_eq!(text.as_str(), Some("[ x ]"));
        assert_eq!(convert_data("{{".into()).as_str(), Some("{{"));
        assert_eq!(convert_data("hello".into()).as_str(), Some("hello"));
    }
}
