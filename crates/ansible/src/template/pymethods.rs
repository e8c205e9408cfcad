//! Python methods called on values in templates (`items.index(x)`): minijinja-contrib's
//! pycompat, and those of Python's lists it lacks.

use minijinja::value::{from_args, Value, ValueKind};
use minijinja::{Error, ErrorKind, State};

/// The method `method` of `value`, as Python's.
pub fn unknown_method(
    state: &State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    if value.kind() == ValueKind::Seq && method == "index" {
        let (wanted,): (&Value,) = from_args(args)?;
        return value
            .try_iter()?
            .position(|item| &item == wanted)
            .map(Value::from)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidOperation,
                    format!("ValueError: {wanted} is not in list"),
                )
            });
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

#[cfg(test)]
mod tests {
    use minijinja::Environment;

    #[test]
    fn list_index_is_pythons() {
        let mut env = Environment::new();
        env.set_unknown_method_callback(super::unknown_method);
        let render = |t: &str| env.render_str(t, ()).map_err(|e| e.to_string());
        assert_eq!(render("{{ ['a', 'b'].index('b') }}"), Ok("1".into()));
        assert_eq!(render("{{ ['a', 'a'].count('a') }}"), Ok("2".into()));
        assert!(render("{{ ['a'].index('z') }}").is_err_and(|e| e.contains("not in list")));
    }
}
