//! Ansible's tests of task results and of truth (ansible-core 2.14's `test/core.py`):
//! `failed`/`failure`, `succeeded`/`success`/`successful`, `changed`/`change`,
//! `skipped`/`skip`, `reachable`/`unreachable`, `finished`, `started`, `truthy`/`falsy`,
//! `vault_encrypted`, and mathstuff's `nan` and `issubset`/`issuperset`.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

/// The result mapping a result test takes, refused in Ansible's words otherwise.
fn result(test: &str, value: &Value) -> Result<(), Error> {
    if value.kind() == ValueKind::Map {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("The '{test}' test expects a dictionary"),
        ))
    }
}

/// `result[key]` taken as Python's truth (missing: false).
fn flag(value: &Value, key: &str) -> bool {
    value
        .get_attr(key)
        .is_ok_and(|v| !v.is_undefined() && v.is_true())
}

fn failed(value: Value) -> Result<bool, Error> {
    result("failed", &value)?;
    Ok(flag(&value, "failed"))
}

fn unreachable(value: Value) -> Result<bool, Error> {
    result("unreachable", &value)?;
    Ok(flag(&value, "unreachable"))
}

fn changed(value: Value) -> Result<bool, Error> {
    result("changed", &value)?;
    let own = value.get_attr("changed")?;
    if !own.is_undefined() {
        return Ok(own.is_true());
    }
    // A loop's result: changed if any item's result is.
    let results = value.get_attr("results")?;
    if results.kind() != ValueKind::Seq {
        return Ok(false);
    }
    let items: Vec<Value> = results.try_iter()?.collect();
    if items.first().is_none_or(|f| f.kind() != ValueKind::Map) {
        return Ok(false);
    }
    Ok(items.iter().any(|r| flag(r, "changed")))
}

fn skipped(value: Value) -> Result<bool, Error> {
    result("skipped", &value)?;
    Ok(flag(&value, "skipped"))
}

/// `finished`/`started`: an async result's 0/1 flag; any other result counts as done.
fn async_flag(test: &'static str) -> impl Fn(Value) -> Result<bool, Error> {
    move |value: Value| {
        result(test, &value)?;
        let flag = value.get_attr(test)?;
        if flag.is_undefined() {
            return Ok(true);
        }
        Ok(flag.as_i64() == Some(1) || (flag.kind() == ValueKind::Bool && flag.is_true()))
    }
}

/// Ansible's `boolean()` of a value, `None` where it is not one of its boolean words.
fn ansible_boolean(value: &Value) -> Option<bool> {
    match value.kind() {
        ValueKind::Bool => Some(value.is_true()),
        ValueKind::Number => match value.as_i64() {
            Some(1) => Some(true),
            Some(0) => Some(false),
            _ => None,
        },
        ValueKind::String => {
            let text = value.as_str()?.trim().to_ascii_lowercase();
            match text.as_str() {
                "y" | "yes" | "on" | "1" | "true" | "t" => Some(true),
                "n" | "no" | "off" | "0" | "false" | "f" => Some(false),
                _ => None,
            }
        }
        _ => None,
    }
}

fn truthy(value: Value, kwargs: Kwargs) -> Result<bool, Error> {
    let convert: bool = kwargs.get::<Option<bool>>("convert_bool")?.unwrap_or(false);
    kwargs.assert_all_used()?;
    if convert {
        if let Some(b) = ansible_boolean(&value) {
            return Ok(b);
        }
    }
    Ok(value.is_true())
}

/// `x is nan`: a float that is not a number (anything else is not NaN).
fn nan(value: Value) -> bool {
    value.kind() == ValueKind::Number && f64::try_from(value).is_ok_and(f64::is_nan)
}

/// Registers these tests on `env` (over minijinja's and earlier ones of the same names).
pub fn register(env: &mut minijinja::Environment<'static>) {
    for name in ["failed", "failure"] {
        env.add_test(name, failed);
    }
    for name in ["succeeded", "success", "successful"] {
        env.add_test(name, |v: Value| Ok(!failed(v)?));
    }
    env.add_test("unreachable", unreachable);
    env.add_test("reachable", |v: Value| Ok(!unreachable(v)?));
    for name in ["changed", "change"] {
        env.add_test(name, changed);
    }
    for name in ["skipped", "skip"] {
        env.add_test(name, skipped);
    }
    env.add_test("finished", async_flag("finished"));
    env.add_test("started", async_flag("started"));
    env.add_test("truthy", truthy);
    env.add_test("falsy", |v: Value, k: Kwargs| Ok(!truthy(v, k)?));
    // A vault value imgbuild opened (known by its clear text, as every output masks it), or
    // one it could not open, which stays its `$ANSIBLE_VAULT;` text.
    env.add_test("vault_encrypted", |v: Value| {
        v.as_str().is_some_and(|s| {
            s.trim_start().starts_with("$ANSIBLE_VAULT;") || crate::vault::is_vault_value(s)
        })
    });
    for name in ["nan", "isnan"] {
        env.add_test(name, nan);
    }
    env.add_test("issubset", |a: Value, b: Value| {
        let b: Vec<Value> = b.try_iter()?.collect();
        Ok::<_, Error>(a.try_iter()?.all(|x| b.contains(&x)))
    });
    env.add_test("issuperset", |a: Value, b: Value| {
        let a: Vec<Value> = a.try_iter()?.collect();
        Ok::<_, Error>(b.try_iter()?.all(|x| a.contains(&x)))
    });
    // Python's any() and all() over the items' truth.
    env.add_test("any", |v: Value| {
        Ok::<_, Error>(v.try_iter()?.any(|x| x.is_true()))
    });
    env.add_test("all", |v: Value| {
        Ok::<_, Error>(v.try_iter()?.all(|x| x.is_true()))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_tests_refuse_what_is_not_a_result() {
        let ok = Value::from_serialize(serde_json::json!({"changed": false, "results": []}));
        assert_eq!(failed(ok.clone()).ok(), Some(false));
        assert_eq!(changed(ok.clone()).ok(), Some(false));
        let err = failed(Value::from("nope")).expect_err("not a result");
        assert_eq!(err.detail(), Some("The 'failed' test expects a dictionary"));
        let looped = Value::from_serialize(
            serde_json::json!({"results": [{"changed": false}, {"changed": true}]}),
        );
        assert_eq!(changed(looped).ok(), Some(true));
        let started = async_flag("started");
        let pending = Value::from_serialize(serde_json::json!({"started": 1, "finished": 0}));
        assert_eq!(started(pending.clone()).ok(), Some(true));
        assert_eq!(async_flag("finished")(pending).ok(), Some(false));
    }

    #[test]
    fn any_and_all_are_pythons() {
        let mut env = minijinja::Environment::new();
        register(&mut env);
        let render = |expr: &str| {
            env.render_str(&format!("{{{{ {expr} }}}}"), ())
                .expect("renders")
        };
        assert_eq!(render("[0, '', 3] is any"), "True");
        assert_eq!(render("[0, ''] is any"), "False");
        assert_eq!(render("[] is all"), "True");
        assert_eq!(render("[1, 0] is all"), "False");
    }

    #[test]
    fn truth_tests_match_ansible() {
        assert!(nan(Value::from(f64::NAN)));
        assert!(!nan(Value::from("bad")));
        assert_eq!(ansible_boolean(&Value::from("off")), Some(false));
        assert_eq!(ansible_boolean(&Value::from("fred")), None);
    }
}
