//! `dict2items` and `items2dict`, Ansible's turns between a mapping and a list of key/value
//! mappings, failing in Ansible's words.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Environment, Error, ErrorKind, Value};

use super::lookup_lists::py_type;

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_filter("dict2items", dict2items);
    env.add_filter("items2dict", items2dict);
}

fn type_error(message: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, message)
}

/// The `key_name` and `value_name` keywords, `key` and `value` unless given.
fn names(kwargs: &Kwargs) -> Result<(String, String), Error> {
    let key_name: Option<String> = kwargs.get("key_name")?;
    let value_name: Option<String> = kwargs.get("value_name")?;
    kwargs.assert_all_used()?;
    Ok((
        key_name.unwrap_or_else(|| "key".into()),
        value_name.unwrap_or_else(|| "value".into()),
    ))
}

/// `dict2items(key_name='key', value_name='value')`.
fn dict2items(value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let (key_name, value_name) = names(&kwargs)?;
    if value.kind() != ValueKind::Map {
        return Err(type_error(format!(
            "dict2items requires a dictionary, got {} instead.",
            py_type(&value)
        )));
    }
    let mut items = Vec::new();
    for key in value.try_iter()? {
        let item = value.get_item(&key)?;
        items.push(Value::from_iter([
            (key_name.as_str(), key),
            (value_name.as_str(), item),
        ]));
    }
    Ok(Value::from(items))
}

/// `items2dict(key_name='key', value_name='value')`.
fn items2dict(value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let (key_name, value_name) = names(&kwargs)?;
    if !matches!(value.kind(), ValueKind::Seq | ValueKind::Iterable) {
        return Err(type_error(format!(
            "items2dict requires a list, got {} instead.",
            py_type(&value)
        )));
    }
    let mut pairs = Vec::new();
    for item in value.try_iter()? {
        if item.kind() != ValueKind::Map {
            return Err(type_error(format!(
                "items2dict requires a list of dictionaries, got {} instead.",
                super::lookup_lists::py_str(&value)
            )));
        }
        let (key, val) = (item.get_attr(&key_name)?, item.get_attr(&value_name)?);
        if key.is_undefined() || val.is_undefined() {
            return Err(type_error(format!(
                "items2dict requires each dictionary in the list to contain the keys '{key_name}' and '{value_name}', got {} instead.",
                super::lookup_lists::py_str(&value)
            )));
        }
        pairs.push((key, val));
    }
    Ok(Value::from_iter(pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(template: &str) -> Result<String, String> {
        let mut env = Environment::new();
        register(&mut env);
        env.render_str(template, ()).map_err(|e| e.to_string())
    }

    #[test]
    fn the_two_turns_undo_each_other() {
        let out = render("{{ {'a': 1, 'b': [2]}|dict2items|items2dict == {'a': 1, 'b': [2]} }}");
        assert_eq!(out.as_deref(), Ok("True"));
        let out = render("{{ {'a': 1}|dict2items(key_name='k', value_name='v') }}");
        assert_eq!(out.as_deref(), Ok(r#"[{"k": "a", "v": 1}]"#));
    }

    #[test]
    fn what_ansible_refuses_is_refused_in_its_words() {
        for (template, words) in [
            ("{{ true|dict2items }}", "dict2items requires a dictionary, got <class 'bool'> instead."),
            ("{{ true|items2dict }}", "items2dict requires a list, got <class 'bool'> instead."),
            ("{{ [true]|items2dict }}", "items2dict requires a list of dictionaries, got [True] instead."),
            (
                "{{ [{'key': 1, 'val': 2}]|items2dict }}",
                "items2dict requires each dictionary in the list to contain the keys 'key' and 'value', got [{'key': 1, 'val': 2}] instead.",
            ),
        ] {
            let out = render(template);
            assert!(out.as_ref().is_err_and(|e| e.contains(words)), "{template}: {out:?}");
        }
    }
}
