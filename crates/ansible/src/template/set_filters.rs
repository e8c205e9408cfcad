//! Ansible's list-as-set filters (`union`, `difference`, `intersect`, `symmetric_difference`)
//! and the `subset`/`superset` tests: Python's order-keeping forms for lists.

use minijinja::{Error, Value};

fn items(value: &Value) -> Result<Vec<Value>, Error> {
    Ok(value.try_iter()?.collect())
}

fn unique(values: impl IntoIterator<Item = Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// `a | union(b)`: the items of both, once each, in order.
pub fn union(a: Value, b: Value) -> Result<Value, Error> {
    Ok(Value::from(unique(
        items(&a)?.into_iter().chain(items(&b)?),
    )))
}

/// `a | difference(b)`: the items of `a` not in `b`, once each.
pub fn difference(a: Value, b: Value) -> Result<Value, Error> {
    let b = items(&b)?;
    Ok(Value::from(unique(
        items(&a)?.into_iter().filter(|x| !b.contains(x)),
    )))
}

/// `a | intersect(b)`: the items of `a` also in `b`, once each.
pub fn intersect(a: Value, b: Value) -> Result<Value, Error> {
    let b = items(&b)?;
    Ok(Value::from(unique(
        items(&a)?.into_iter().filter(|x| b.contains(x)),
    )))
}

/// `a | symmetric_difference(b)`: the items in exactly one of them.
pub fn symmetric_difference(a: Value, b: Value) -> Result<Value, Error> {
    let common = items(&intersect(a.clone(), b.clone())?)?;
    Ok(Value::from(
        items(&union(a, b)?)?
            .into_iter()
            .filter(|x| !common.contains(x))
            .collect::<Vec<_>>(),
    ))
}

/// `a is subset(b)`.
pub fn subset(a: Value, b: Value) -> Result<bool, Error> {
    let b = items(&b)?;
    Ok(items(&a)?.iter().all(|x| b.contains(x)))
}

/// `a is superset(b)`.
pub fn superset(a: Value, b: Value) -> Result<bool, Error> {
    subset(b, a)
}

/// Registers the filters and tests.
pub fn register(env: &mut minijinja::Environment<'static>) {
    env.add_filter("union", union);
    env.add_filter("difference", difference);
    env.add_filter("intersect", intersect);
    env.add_filter("symmetric_difference", symmetric_difference);
    env.add_test("subset", subset);
    env.add_test("superset", superset);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Value {
        Value::from(items.iter().map(|s| Value::from(*s)).collect::<Vec<_>>())
    }

    #[test]
    fn order_kept_as_ansible_keeps_it_for_lists() {
        let (a, b) = (list(&["x", "y", "x", "z"]), list(&["z", "w"]));
        let show = |v: Value| v.to_string();
        assert_eq!(
            show(union(a.clone(), b.clone()).expect("union")),
            r#"["x", "y", "z", "w"]"#
        );
        assert_eq!(
            show(difference(a.clone(), b.clone()).expect("d")),
            r#"["x", "y"]"#
        );
        assert_eq!(
            show(intersect(a.clone(), b.clone()).expect("i")),
            r#"["z"]"#
        );
        assert_eq!(
            show(symmetric_difference(a.clone(), b.clone()).expect("s")),
            r#"["x", "y", "w"]"#
        );
        assert!(subset(list(&["z"]), b.clone()).expect("subset"));
        assert!(!superset(list(&["z"]), b).expect("superset"));
    }
}
