//! The shared minijinja environment: strict undefined, Ansible's filters and tests, Python's
//! string methods and printing.

use std::sync::Arc;

use minijinja::{Environment, UndefinedBehavior, Value};

use super::filters::OMIT;
use super::templar::Templar;
use super::{
    dict_filters, file_tests, filters, human_filters, jinja_tests, lookup_lists, lookups,
    math_filters, now, printf, pymethods, pyrepr, python_filters, random_filters, result_tests,
    select_filters, set_filters, to_datetime, url_filters,
};

impl Default for Templar {
    fn default() -> Self {
        Self::new()
    }
}

impl Templar {
    /// The environment: strict undefined, Ansible's filters and tests, Python string methods.
    pub fn new() -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // Jinja2 drops one final newline; Ansible then adds back as many as the source ended
        // with (see `render_to_string_in`).
        env.set_keep_trailing_newline(false);
        env.set_trim_blocks(true);
        env.set_unknown_method_callback(pymethods::unknown_method);
        env.set_formatter(python_formatter);
        env.add_global("omit", OMIT);
        filters::register(&mut env);
        dict_filters::register(&mut env);
        set_filters::register(&mut env);
        select_filters::register(&mut env);
        python_filters::register(&mut env);
        math_filters::register(&mut env);
        jinja_tests::register(&mut env);
        file_tests::register(&mut env);
        result_tests::register(&mut env);
        url_filters::register(&mut env);
        random_filters::register(&mut env);
        human_filters::register(&mut env);
        env.add_filter("format", printf::format);
        env.add_filter("subelements", lookup_lists::subelements_filter);
        env.add_function("lookup", lookups::lookup);
        env.add_function("now", now::now);
        env.add_function("undef", undef);
        env.add_filter("to_datetime", to_datetime::to_datetime);
        env.add_function("query", lookups::query);
        env.add_function("q", lookups::query);
        Templar::from_environment(Arc::new(env))
    }

    /// This templar with the Python filter and test plugins of a project (see
    /// [`PythonPlugins`](super::PythonPlugins)), where imgbuild has none of the name.
    pub fn with_python_plugins(&self, plugins: &Arc<super::PythonPlugins>) -> Self {
        let mut env = self.environment().clone();
        super::python_plugins::register(&mut env, plugins);
        Templar::from_environment(Arc::new(env))
    }
}

/// Ansible's `undef(hint=None)` global: an undefined value, for a variable a play must set (a
/// default that fails only where it is used). Where it fails, the undefined name is the call
/// with its hint, and the variables whose values needed it.
fn undef(
    state: &minijinja::State,
    hint: Option<String>,
    kwargs: minijinja::value::Kwargs,
) -> Result<Value, minijinja::Error> {
    let hint = kwargs.get::<Option<String>>("hint")?.or(hint);
    kwargs.assert_all_used()?;
    // A name no variable has, looked up so that the templar names it if the value is used.
    let name = match hint {
        Some(hint) => format!("undef({hint:?})"),
        None => "undef()".to_owned(),
    };
    Ok(state.lookup(&name).unwrap_or(Value::UNDEFINED))
}

/// Prints a value as Jinja2 under Ansible does: nothing for None, Python's `repr` for lists and
/// mappings, `True`/`False` for booleans.
fn python_formatter(
    out: &mut minijinja::Output,
    state: &minijinja::State,
    value: &Value,
) -> Result<(), minijinja::Error> {
    use minijinja::value::ValueKind;
    match value.kind() {
        ValueKind::None => Ok(()),
        // Printing an undefined value fails even where undefined values chain.
        ValueKind::Undefined => Err(minijinja::Error::from(minijinja::ErrorKind::UndefinedError)),
        ValueKind::Bool => out
            .write_str(if value.is_true() { "True" } else { "False" })
            .map_err(minijinja::Error::from),
        ValueKind::Seq | ValueKind::Map | ValueKind::Iterable => {
            let mut text = String::new();
            pyrepr::write_repr(value, &mut text)?;
            out.write_str(&text).map_err(minijinja::Error::from)
        }
        _ => minijinja::escape_formatter(out, state, value),
    }
}
