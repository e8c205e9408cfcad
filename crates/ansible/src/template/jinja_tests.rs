//! Ansible's `version` test.

use std::cmp::Ordering;

use minijinja::value::Kwargs;
use minijinja::{Error, ErrorKind, Value};

/// Registers every test of this module on `env`.
pub fn register(env: &mut minijinja::Environment<'static>) {
    env.add_test("version", version);
    env.add_test("version_compare", version);
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Num(u64),
    Text(String),
}

/// Splits a version the way Python's `LooseVersion` does: runs of digits and of letters.
fn loose_parts(version: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut chars = version.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_ascii_digit() {
            let mut n = String::new();
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                n.push(d);
                chars.next();
            }
            parts.push(n.parse().map(Part::Num).unwrap_or(Part::Text(n)));
        } else if c.is_alphabetic() {
            let mut t = String::new();
            while let Some(a) = chars.peek().copied().filter(|c| c.is_alphabetic()) {
                t.push(a);
                chars.next();
            }
            parts.push(Part::Text(t));
        } else {
            chars.next();
        }
    }
    parts
}

/// Compares two versions loosely (numbers numerically, text lexically).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    loose_parts(a).cmp(&loose_parts(b))
}

fn version(
    value: Value,
    other: Value,
    operator: Option<String>,
    kwargs: Kwargs,
) -> Result<bool, Error> {
    let _: Option<bool> = kwargs.get("strict")?;
    let _: Option<String> = kwargs.get("version_type")?;
    let op_kw: Option<String> = kwargs.get("operator")?;
    kwargs.assert_all_used()?;
    let operator = operator.or(op_kw).unwrap_or_else(|| "==".into());
    let ordering = compare_versions(&value.to_string(), &other.to_string());
    Ok(match operator.as_str() {
        "<" | "lt" => ordering == Ordering::Less,
        "<=" | "le" => ordering != Ordering::Greater,
        ">" | "gt" => ordering == Ordering::Greater,
        ">=" | "ge" => ordering != Ordering::Less,
        "==" | "=" | "eq" => ordering == Ordering::Equal,
        "!=" | "<>" | "ne" => ordering != Ordering::Equal,
        other => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("version: unknown operator '{other}'; use one of < <= > >= == !="),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_version_order() {
        assert_eq!(compare_versions("9.5", "9"), Ordering::Greater);
        assert_eq!(compare_versions("8.10", "8.9"), Ordering::Greater);
        assert_eq!(
            compare_versions("24.10-2.1.8.0", "23.10-5.1.4.0"),
            Ordering::Greater
        );
        assert_eq!(compare_versions("1.0", "1.0"), Ordering::Equal);
    }
}
