//! Ansible's `human_readable` and `human_to_bytes` filters (ansible's
//! `module_utils.common.text.formatters`): sizes in binary units, with its rounding (Python's
//! round half to even) and its error messages.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

/// Ansible's SIZE_RANGES, largest first.
const RANGES: &[(char, f64)] = &[
    ('Y', 1_208_925_819_614_629_174_706_176.0),
    ('Z', 1_180_591_620_717_411_303_424.0),
    ('E', 1_152_921_504_606_846_976.0),
    ('P', 1_125_899_906_842_624.0),
    ('T', 1_099_511_627_776.0),
    ('G', 1_073_741_824.0),
    ('M', 1_048_576.0),
    ('K', 1024.0),
    ('B', 1.0),
];

fn failed(message: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, message)
}

/// `size | human_readable(isbits=False, unit=None)`: `"10.00 KB"`, `"1.00 Bytes"`.
pub fn human_readable(size: Value, kwargs: Kwargs) -> Result<String, Error> {
    let isbits: bool = kwargs.get::<Option<bool>>("isbits")?.unwrap_or(false);
    let unit: Option<String> = kwargs.get("unit")?;
    kwargs.assert_all_used()?;
    let size = match size.kind() {
        ValueKind::Number => f64::try_from(size.clone()).map_err(|e| failed(e.to_string()))?,
        _ => {
            return Err(failed(format!(
                "human_readable() failed on bad input: '>=' not supported between instances of '{}' and 'int'",
                python_type(&size)
            )))
        }
    };
    let wanted = unit
        .as_deref()
        .and_then(|u| u.chars().next())
        .map(|c| c.to_ascii_uppercase());
    let (suffix, limit) = RANGES
        .iter()
        .copied()
        .find(|(suffix, limit)| match wanted {
            Some(w) => w == *suffix,
            None => size >= *limit,
        })
        .unwrap_or(('B', 1.0));
    let base = if isbits { "bits" } else { "Bytes" };
    let suffix = if limit == 1.0 {
        base.to_owned()
    } else {
        format!("{suffix}{}", &base[..1])
    };
    Ok(format!("{:.2} {suffix}", size / limit))
}

fn python_type(value: &Value) -> &'static str {
    match value.kind() {
        ValueKind::String => "str",
        ValueKind::Seq => "list",
        ValueKind::Map => "dict",
        ValueKind::Bool => "bool",
        ValueKind::None | ValueKind::Undefined => "NoneType",
        _ => "object",
    }
}

/// `"10 MB" | human_to_bytes(default_unit=None, isbits=False)`: the count of bytes (or bits).
pub fn human_to_bytes(size: Value, kwargs: Kwargs) -> Result<i64, Error> {
    let default_unit: Option<String> = kwargs.get("default_unit")?;
    let isbits: bool = kwargs.get::<Option<bool>>("isbits")?.unwrap_or(false);
    kwargs.assert_all_used()?;
    let text = match size.as_str() {
        Some(s) => s.to_owned(),
        None => size.to_string(),
    };
    to_bytes(&text, default_unit.as_deref(), isbits).map_err(|_| {
        failed(format!(
            "human_to_bytes() can't interpret following string: {text}"
        ))
    })
}

/// Ansible's `human_to_bytes`; `Err` where it raises ValueError.
fn to_bytes(text: &str, default_unit: Option<&str>, isbits: bool) -> Result<i64, ()> {
    let trimmed = text.trim_start();
    let digits = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, rest) = trimmed.split_at(digits);
    // `\d*\.?\d*`: at most one point.
    if number.matches('.').count() > 1 {
        return Err(());
    }
    let num: f64 = number.parse().map_err(|_| ())?;
    let rest = rest.trim_start();
    let letters: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
    let unit = match (letters.is_empty(), default_unit) {
        (false, _) => letters,
        (true, Some(unit)) => unit.to_owned(),
        (true, None) => return Ok(num.round_ties_even() as i64),
    };
    let key = unit.chars().next().ok_or(())?.to_ascii_uppercase();
    let (_, limit) = RANGES.iter().find(|(k, _)| *k == key).ok_or(())?;
    let (class, name) = if isbits { ('b', "bit") } else { ('B', "byte") };
    if unit.len() > 1 && !unit.to_lowercase().contains(name) && unit.chars().nth(1) != Some(class) {
        return Err(());
    }
    Ok((num * limit).round_ties_even() as i64)
}

/// Registers the filters.
pub fn register(env: &mut minijinja::Environment<'static>) {
    env.add_filter("human_readable", human_readable);
    env.add_filter("human_to_bytes", human_to_bytes);
}

#[cfg(test)]
mod tests {
    use super::to_bytes;

    #[test]
    fn sizes_read_as_ansible_reads_them() {
        assert_eq!(to_bytes("0.1", None, false), Ok(0));
        assert_eq!(to_bytes("0.9", None, false), Ok(1));
        assert_eq!(to_bytes("10.00 KB", None, false), Ok(10240));
        assert_eq!(to_bytes("1.1 GB", None, false), Ok(1_181_116_006));
        assert_eq!(to_bytes("10.00 Kb", None, true), Ok(10240));
        assert_eq!(to_bytes("10 Mb", None, false), Err(()));
        assert_eq!(to_bytes("10.00 foo", None, false), Err(()));
        assert_eq!(to_bytes("2", Some("K"), false), Ok(2048));
    }
}
