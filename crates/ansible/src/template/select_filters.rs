//! `select`, `reject`, `selectattr` and `rejectattr` as Jinja2 under Ansible runs them: a test
//! named that no plugin provides fails in Ansible's words (`Could not load "name": ...`), which
//! roles and Ansible's own tests match on; otherwise Jinja2's filters as they are.

use std::borrow::Cow;

use minijinja::filters;
use minijinja::value::{Rest, Value};
use minijinja::{Error, ErrorKind, State};

/// Whether `name` is a plugin name Ansible can load: dotted Python identifiers.
fn is_plugin_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// Jinja2's error for a test no plugin provides, in Ansible's words.
fn in_ansibles_words(error: Error, name: &Option<Cow<'_, str>>) -> Error {
    let Some(name) = name
        .as_deref()
        .filter(|_| error.kind() == ErrorKind::UnknownTest)
    else {
        return error;
    };
    let why = if is_plugin_name(name) {
        format!("'{name}'")
    } else {
        format!("'invalid plugin name: ansible.builtin.{name}'")
    };
    Error::new(
        ErrorKind::UnknownTest,
        format!("TemplateSyntaxError: Could not load \"{name}\": {why}"),
    )
}

fn select(
    state: &State,
    value: Value,
    test: Option<Cow<'_, str>>,
    args: Rest<Value>,
) -> Result<Vec<Value>, Error> {
    let name = test.clone();
    filters::select(state, value, test, args).map_err(|e| in_ansibles_words(e, &name))
}

fn reject(
    state: &State,
    value: Value,
    test: Option<Cow<'_, str>>,
    args: Rest<Value>,
) -> Result<Vec<Value>, Error> {
    let name = test.clone();
    filters::reject(state, value, test, args).map_err(|e| in_ansibles_words(e, &name))
}

fn selectattr(
    state: &State,
    value: Value,
    attr: Cow<'_, str>,
    test: Option<Cow<'_, str>>,
    args: Rest<Value>,
) -> Result<Vec<Value>, Error> {
    let name = test.clone();
    filters::selectattr(state, value, attr, test, args).map_err(|e| in_ansibles_words(e, &name))
}

fn rejectattr(
    state: &State,
    value: Value,
    attr: Cow<'_, str>,
    test: Option<Cow<'_, str>>,
    args: Rest<Value>,
) -> Result<Vec<Value>, Error> {
    let name = test.clone();
    filters::rejectattr(state, value, attr, test, args).map_err(|e| in_ansibles_words(e, &name))
}

/// Registers the four filters over minijinja's own.
pub fn register(env: &mut minijinja::Environment<'static>) {
    env.add_filter("select", select);
    env.add_filter("reject", reject);
    env.add_filter("selectattr", selectattr);
    env.add_filter("rejectattr", rejectattr);
}

#[cfg(test)]
mod tests {
    use minijinja::Environment;

    fn render(template: &str) -> Result<String, String> {
        let mut env = Environment::new();
        super::register(&mut env);
        env.render_str(template, ())
            .map_err(|e| e.detail().unwrap_or_default().to_owned())
    }

    #[test]
    fn unknown_tests_fail_in_ansibles_words() {
        assert_eq!(
            render("{{ [1] | select('nosuch') }}"),
            Err("TemplateSyntaxError: Could not load \"nosuch\": 'nosuch'".into())
        );
        assert_eq!(
            render("{{ [{'a': 1}] | selectattr('a', 'asdf ', 1) }}"),
            Err("TemplateSyntaxError: Could not load \"asdf \": 'invalid plugin name: ansible.builtin.asdf '".into())
        );
        assert_eq!(
            render("{{ [1, 2] | reject('odd') | list }}"),
            Ok("[2]".into())
        );
    }
}
