//! Ansible's `version` test (`version_compare`), in every version scheme it takes.

use std::cmp::Ordering;

use minijinja::value::Kwargs;
use minijinja::{Error, ErrorKind, Value};

#[cfg(test)]
use super::version_types::compare_versions;
use super::version_types::Scheme;

/// Registers every test of this module on `env`.
pub fn register(env: &mut minijinja::Environment<'static>) {
    env.add_test("version", version);
    env.add_test("version_compare", version);
}

fn version(
    value: Value,
    other: Value,
    operator: Option<String>,
    strict: Option<bool>,
    kwargs: Kwargs,
) -> Result<bool, Error> {
    let strict = match strict {
        Some(strict) => Some(strict),
        None => kwargs.get("strict")?,
    };
    let version_type: Option<String> = kwargs.get("version_type")?;
    let op_kw: Option<String> = kwargs.get("operator")?;
    kwargs.assert_all_used()?;
    let failed = |message: String| Error::new(ErrorKind::InvalidOperation, message);
    if strict.is_some() && version_type.is_some() {
        return Err(failed(
            "Cannot specify both 'strict' and 'version_type'".into(),
        ));
    }
    let (value, other) = (value.to_string(), other.to_string());
    if value.is_empty() {
        return Err(failed("Input version value cannot be empty".into()));
    }
    if other.is_empty() {
        return Err(failed(
            "Version parameter to compare against cannot be empty".into(),
        ));
    }
    let scheme = match (strict, version_type.as_deref()) {
        (Some(true), _) => Scheme::Strict,
        (_, Some(name)) => Scheme::named(name).ok_or_else(|| {
            failed(format!(
                "Invalid version type ({name}). Must be one of loose, pep440, semantic, semver, strict"
            ))
        })?,
        _ => Scheme::Loose,
    };
    let operator = operator.or(op_kw).unwrap_or_else(|| "eq".into());
    let ordering = scheme
        .compare(&value, &other)
        .map_err(|why| failed(format!("Version comparison failed: {why}")))?;
    Ok(match operator.as_str() {
        "<" | "lt" => ordering == Ordering::Less,
        "<=" | "le" => ordering != Ordering::Greater,
        ">" | "gt" => ordering == Ordering::Greater,
        ">=" | "ge" => ordering != Ordering::Less,
        "==" | "=" | "eq" => ordering == Ordering::Equal,
        "!=" | "<>" | "ne" => ordering != Ordering::Equal,
        other => {
            return Err(failed(format!(
                "Invalid operator type ({other}). Must be one of <, lt, <=, le, >, gt, >=, ge, ==, =, eq, !=, <>, ne"
            )))
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
