//! The lookups that read no project file: `vars`, `env` and `sequence`.

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

/// `lookup('sequence', 'start=1 end=3 format=n%02d')` (or `count=`, `stride=`), as Ansible's
/// sequence lookup counts.
pub fn sequence(terms: &[String]) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for term in terms {
        let (mut start, mut end, mut count, mut stride) = (1i64, None, None, 1i64);
        let mut format = "%d".to_owned();
        for word in term.split_whitespace() {
            let (key, value) = word
                .split_once('=')
                .ok_or_else(|| invalid(format!("sequence: '{word}' is not key=value")))?;
            let number = || {
                value
                    .parse::<i64>()
                    .map_err(|_| invalid(format!("sequence: {key}={value} is not a number")))
            };
            match key {
                "start" => start = number()?,
                "end" => end = Some(number()?),
                "count" => count = Some(number()?),
                "stride" => stride = number()?,
                "format" => format = value.to_owned(),
                other => return Err(invalid(format!("sequence: unknown option '{other}'"))),
            }
        }
        let end = match (end, count) {
            (Some(end), None) => end,
            (None, Some(count)) => start + (count - 1) * stride,
            _ => return Err(invalid("sequence: give exactly one of end= and count=")),
        };
        if stride == 0 {
            return Err(invalid("sequence: stride must not be 0"));
        }
        let mut n = start;
        while (stride > 0 && n <= end) || (stride < 0 && n >= end) {
            out.push(Value::from(printf_int(&format, n)?));
            n += stride;
        }
    }
    Ok(out)
}

/// One `%d`, `%x`, `%o` with an optional `0` flag and width, as Python's `%` formats an int.
fn printf_int(format: &str, n: i64) -> Result<String, Error> {
    let Some(at) = format.find('%') else {
        return Ok(format.to_owned());
    };
    let spec: String = format[at + 1..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    let conv = format[at + 1 + spec.len()..].chars().next();
    let width: usize = spec.parse().unwrap_or(0);
    let zero = spec.starts_with('0');
    let digits = match conv {
        Some('d') | Some('i') => n.to_string(),
        Some('x') => format!("{n:x}"),
        Some('o') => format!("{n:o}"),
        _ => {
            return Err(invalid(format!(
                "sequence: format '{format}' is not %d, %x or %o"
            )))
        }
    };
    let padded = match (zero, width) {
        (true, w) => format!("{digits:0>w$}"),
        (false, w) => format!("{digits:>w$}"),
    };
    let rest = &format[at + 2 + spec.len()..];
    Ok(format!("{}{padded}{rest}", &format[..at]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_as_ansible_counts_them() {
        let got = sequence(&["start=1 end=3 format=n%02d".into()]).expect("sequence");
        let got: Vec<String> = got.iter().map(|v| v.to_string()).collect();
        assert_eq!(got, ["n01", "n02", "n03"]);
        let got = sequence(&["start=10 count=2 stride=5".into()]).expect("sequence");
        let got: Vec<String> = got.iter().map(|v| v.to_string()).collect();
        assert_eq!(got, ["10", "15"]);
        assert!(sequence(&["start=1".into()]).is_err());
    }
}
