//! The lookups that read no project file: `vars` and `env`.

use minijinja::value::Kwargs;
use minijinja::{Error, ErrorKind, State, Value};

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// `lookup('vars', name, ..., default=...)`: variables by a name that is itself a value.
pub fn vars(state: &State, names: &[String], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let default: Option<Value> = kwargs.get("default")?;
    names
        .iter()
        .map(
            |name| match state.lookup(name).filter(|v| !v.is_undefined()) {
                Some(value) => Ok(value),
                None => default
                    .clone()
                    .ok_or_else(|| invalid(format!("No variable found with this name: {name}"))),
            },
        )
        .collect()
}

/// `lookup('env', name, ..., default=...)`: the build host's environment (Ansible reads the
/// controller's); unset gives the default, else "".
pub fn env(names: &[String], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let default: Option<String> = kwargs.get("default")?;
    Ok(names
        .iter()
        .map(|name| {
            Value::from(
                std::env::var(name)
                    .ok()
                    .or_else(|| default.clone())
                    .unwrap_or_default(),
            )
        })
        .collect())
}
