//! Ansible's arithmetic and record filters (its `mathstuff` plugin): `log`, `pow`, `root` and
//! `rekey_on_member`, failing in its words.

use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{Error, ErrorKind};

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// `value` as a number, or the error Ansible's filter `name` gives for anything else.
fn number(name: &str, value: &Value) -> Result<f64, Error> {
    if value.kind() == ValueKind::Number {
        if let Ok(n) = f64::try_from(value.clone()) {
            return Ok(n);
        }
    }
    Err(invalid(format!(
        "{name}() can only be used on numbers: must be real number, not {}",
        super::lookup_lists::py_type(value)
    )))
}

/// `x | log(base=e)`.
fn log(value: Value, base: Option<Value>) -> Result<f64, Error> {
    let x = number("log", &value)?;
    Ok(match base {
        None => x.ln(),
        Some(base) => {
            let b = number("log", &base)?;
            if b == 10.0 {
                x.log10()
            } else {
                x.ln() / b.ln()
            }
        }
    })
}

/// `x | pow(y)`.
fn pow(value: Value, exponent: Value) -> Result<f64, Error> {
    Ok(number("pow", &value)?.powf(number("pow", &exponent)?))
}

/// `x | root(base=2)`.
fn root(value: Value, base: Option<Value>) -> Result<f64, Error> {
    let x = number("root", &value)?;
    Ok(match base {
        None => x.sqrt(),
        Some(base) => {
            let b = number("root", &base)?;
            if b == 2.0 {
                x.sqrt()
            } else {
                x.powf(1.0 / b)
            }
        }
    })
}

/// `records | rekey_on_member(key, duplicates='error')`: a mapping of each record (a list's
/// items, or a mapping's values) under its own `key`.
fn rekey_on_member(
    data: Value,
    key: Value,
    duplicates: Option<String>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let duplicates = kwargs
        .get::<Option<String>>("duplicates")?
        .or(duplicates)
        .unwrap_or_else(|| "error".into());
    kwargs.assert_all_used()?;
    if duplicates != "error" && duplicates != "overwrite" {
        return Err(invalid(format!(
            "duplicates parameter to rekey_on_member has unknown value: {duplicates}"
        )));
    }
    let records: Vec<Value> = match data.kind() {
        ValueKind::Map => data
            .try_iter()?
            .map(|k| data.get_item(&k))
            .collect::<Result<_, _>>()?,
        ValueKind::Seq | ValueKind::Iterable => data.try_iter()?.collect(),
        _ => return Err(invalid("Type is not a valid list, set, or dict")),
    };
    let mut out: Vec<(Value, Value)> = Vec::new();
    for record in records {
        if record.kind() != ValueKind::Map {
            return Err(invalid("List item is not a valid dict"));
        }
        let member = record.get_item(&key)?;
        if member.is_undefined() {
            return Err(invalid(format!("Key {key} was not found")));
        }
        match out.iter_mut().find(|(k, _)| *k == member) {
            Some(_) if duplicates == "error" => {
                return Err(invalid(format!(
                    "Key {member} is not unique, cannot correctly turn into dict"
                )))
            }
            Some(slot) => slot.1 = record,
            None => out.push((member, record)),
        }
    }
    Ok(Value::from_iter(out))
}

/// Registers the filters.
pub fn register(env: &mut minijinja::Environment<'static>) {
    env.add_filter("log", log);
    env.add_filter("pow", pow);
    env.add_filter("root", root);
    env.add_filter("rekey_on_member", rekey_on_member);
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
    fn arithmetic_on_numbers_and_ansibles_words_otherwise() {
        assert_eq!(render("{{ 100 | log(10) }}"), Ok("2.0".into()));
        assert_eq!(render("{{ 2 | pow(3) }}"), Ok("8.0".into()));
        assert_eq!(render("{{ 27 | root(3) }}"), Ok("3.0".into()));
        assert!(
            render("{{ 'yo' | log }}").is_err_and(|e| e.contains("can only be used on numbers"))
        );
        assert!(render("{{ 'yo' | pow(2) }}").is_err_and(|e| e.starts_with("pow()")));
    }

    #[test]
    fn rekey_on_member_as_ansible() {
        assert_eq!(
            render("{{ [{'proto': 'eigrp', 'x': 1}, {'proto': 'ospf'}] | rekey_on_member('proto') | list }}"),
            Ok("[\"eigrp\", \"ospf\"]".into())
        );
        assert!(render("{{ [{'a': 1}, {'a': 1}] | rekey_on_member('a') }}")
            .is_err_and(|e| e.contains("is not unique")));
        assert!(render("{{ [{'a': 1}] | rekey_on_member('b') }}")
            .is_err_and(|e| e.contains("was not found")));
        assert!(render("{{ [1] | rekey_on_member('b') }}")
            .is_err_and(|e| e.contains("not a valid dict")));
        assert!(render("{{ 1 | rekey_on_member('b') }}").is_err_and(|e| e.contains("valid list")));
        assert!(render("{{ [] | rekey_on_member('b', duplicates='x') }}")
            .is_err_and(|e| e.contains("unknown value")));
    }
}
