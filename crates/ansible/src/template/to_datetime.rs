//! Ansible's `to_datetime(string, format='%Y-%m-%d %H:%M:%S')` filter: Python's
//! `datetime.strptime`, giving the datetime `now()` gives (its fields, `strftime`, printed and
//! compared as Python's).

use minijinja::value::Value;
use minijinja::{Error, ErrorKind};

use super::now::{days_from_civil, DateTime};

/// The filter.
pub fn to_datetime(string: String, format: Option<String>) -> Result<Value, Error> {
    let format = format.unwrap_or_else(|| "%Y-%m-%d %H:%M:%S".into());
    let parsed = strptime(&string, &format).map_err(|msg| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("to_datetime: ValueError: {msg}"),
        )
    })?;
    Ok(Value::from_object(parsed))
}

/// What a format has read so far; Python's defaults where it reads nothing.
struct Fields {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    micro: i64,
    /// `%p`: Some(true) for PM, with `%I`'s 12-hour clock.
    pm: Option<bool>,
    twelve_hour: bool,
    yday: Option<i64>,
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const DAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Python's `datetime.strptime(text, format)` for the directives `%Y %y %m %d %H %I %p %M %S
/// %f %j %b %B %a %A %%`; a space in the format matches any run of white space, as Python's.
fn strptime(text: &str, format: &str) -> Result<DateTime, String> {
    let mismatch = || format!("time data '{text}' does not match format '{format}'");
    let mut f = Fields {
        year: 1900,
        month: 1,
        day: 1,
        hour: 0,
        minute: 0,
        second: 0,
        micro: 0,
        pm: None,
        twelve_hour: false,
        yday: None,
    };
    let mut rest = text;
    let mut directives = format.chars();
    while let Some(c) = directives.next() {
        if c.is_whitespace() {
            let trimmed = rest.trim_start();
            if trimmed.len() == rest.len() {
                return Err(mismatch());
            }
            rest = trimmed;
            continue;
        }
        if c != '%' {
            rest = rest.strip_prefix(c).ok_or_else(mismatch)?;
            continue;
        }
        let directive = directives.next().ok_or_else(mismatch)?;
        rest = read_directive(directive, rest, &mut f).ok_or_else(mismatch)?;
    }
    if !rest.is_empty() {
        return Err(format!("unconverted data remains: {rest}"));
    }
    to_datetime_of(&f)
}

/// Reads one directive's text into `f`: what is left, or None when it does not match.
fn read_directive<'t>(directive: char, text: &'t str, f: &mut Fields) -> Option<&'t str> {
    let number = |max: usize| -> Option<(i64, &'t str)> {
        let len = text
            .bytes()
            .take(max)
            .take_while(u8::is_ascii_digit)
            .count();
        if len == 0 {
            return None;
        }
        Some((text[..len].parse().ok()?, &text[len..]))
    };
    let (value, rest) = match directive {
        '%' => return text.strip_prefix('%'),
        'b' | 'B' | 'a' | 'A' => return read_name(directive, text, f),
        'p' => {
            let head = text.get(..2)?.to_ascii_lowercase();
            f.pm = Some(match head.as_str() {
                "am" => false,
                "pm" => true,
                _ => return None,
            });
            return text.get(2..);
        }
        'Y' => number(4)?,
        'f' => {
            let (_, rest) = number(6)?;
            let digits = &text[..text.len() - rest.len()];
            f.micro = format!("{digits:0<6}").parse().ok()?;
            return Some(rest);
        }
        'j' => number(3)?,
        'm' | 'd' | 'H' | 'I' | 'M' | 'S' | 'y' => number(2)?,
        _ => return None,
    };
    match directive {
        'Y' => f.year = value,
        'y' => {
            f.year = if value < 69 {
                2000 + value
            } else {
                1900 + value
            }
        }
        'm' => f.month = value,
        'd' => f.day = value,
        'H' => f.hour = value,
        'I' => {
            f.hour = value;
            f.twelve_hour = true;
        }
        'M' => f.minute = value,
        'S' => f.second = value,
        'j' => f.yday = Some(value),
        _ => {}
    }
    Some(rest)
}

/// `%b %B` (a month's name, short or full) and `%a %A` (a day's, which Python reads and drops).
fn read_name<'t>(directive: char, text: &'t str, f: &mut Fields) -> Option<&'t str> {
    let lower = text.to_ascii_lowercase();
    let names: &[&str] = if matches!(directive, 'b' | 'B') {
        &MONTHS
    } else {
        &DAYS
    };
    let full = matches!(directive, 'B' | 'A');
    let (index, len) = names.iter().enumerate().find_map(|(i, name)| {
        let name = if full { name } else { &name[..3] };
        lower.starts_with(name).then_some((i, name.len()))
    })?;
    if matches!(directive, 'b' | 'B') {
        f.month = index as i64 + 1;
    }
    text.get(len..)
}

/// The datetime of what was read, refused as Python refuses an impossible one.
fn to_datetime_of(f: &Fields) -> Result<DateTime, String> {
    let mut hour = f.hour;
    if f.twelve_hour {
        if !(1..=12).contains(&hour) {
            return Err("hour must be in 1..12".into());
        }
        hour = hour % 12 + if f.pm == Some(true) { 12 } else { 0 };
    }
    let (mut month, mut day) = (f.month, f.day);
    if let Some(yday) = f.yday {
        let first = days_from_civil(f.year, 1, 1);
        let (_, m, d) = super::now::civil(first + yday - 1);
        (month, day) = (i64::from(m), i64::from(d));
    }
    if !(1..=12).contains(&month) {
        return Err("month must be in 1..12".into());
    }
    let next_month = if month == 12 {
        days_from_civil(f.year + 1, 1, 1)
    } else {
        days_from_civil(f.year, month + 1, 1)
    };
    if day < 1 || day > next_month - days_from_civil(f.year, month, 1) {
        return Err("day is out of range for month".into());
    }
    if hour > 23 || f.minute > 59 || f.second > 61 {
        return Err("hour, minute or second out of range".into());
    }
    let days = days_from_civil(f.year, month, day);
    let secs = days * 86_400 + hour * 3600 + f.minute * 60 + f.second;
    Ok(DateTime::from_unix(secs, f.micro as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(template: &str) -> String {
        let mut env = minijinja::Environment::new();
        env.add_filter("to_datetime", to_datetime);
        env.render_str(template, ())
            .unwrap_or_else(|e| format!("error: {e}"))
    }

    #[test]
    fn strings_read_as_python_reads_them() {
        // python3 -c 'import datetime as d; x = d.datetime.strptime("1993-03-26 01:23:45", "%Y-%m-%d %H:%M:%S"); print(x, x.year, x.strftime("%j %A"))'
        let t = r#"{% set x = "1993-03-26 01:23:45"|to_datetime %}{{ x }} {{ x.year }} {{ x.strftime("%j %A") }}"#;
        assert_eq!(render(t), "1993-03-26 01:23:45 1993 085 Friday");
        // python3 -c 'import datetime as d; print(d.datetime.strptime("Mar 5 2024 7:08PM .25", "%b %d %Y %I:%M%p .%f"))'
        let t = r#"{{ "Mar 5 2024 7:08PM .25"|to_datetime("%b %d %Y %I:%M%p .%f") }}"#;
        assert_eq!(render(t), "2024-03-05 19:08:00.250000");
        assert_eq!(
            render(r#"{{ "24/060"|to_datetime("%y/%j") }}"#),
            "2024-02-29 00:00:00"
        );
    }

    #[test]
    fn datetimes_compare_by_time() {
        let t = r#"{{ "1993-03-26 01:23:45"|to_datetime < "1994-03-26 01:23:45"|to_datetime }} {{ "2000-01-01 00:00:00"|to_datetime == "2000-01-01 00:00:00"|to_datetime }} {{ "2000-01-02 00:00:00"|to_datetime > "1999-12-31 23:59:59"|to_datetime }}"#;
        assert_eq!(render(t).to_lowercase(), "true true true");
    }

    #[test]
    fn what_python_refuses_is_refused_with_its_words() {
        let out = render(r#"{{ "1993-03-26"|to_datetime }}"#);
        assert!(
            out.contains("time data '1993-03-26' does not match format '%Y-%m-%d %H:%M:%S'"),
            "{out}"
        );
        let out = render(r#"{{ "2023-02-29"|to_datetime("%Y-%m-%d") }}"#);
        assert!(out.contains("day is out of range for month"), "{out}");
        let out = render(r#"{{ "2023-02-28 junk"|to_datetime("%Y-%m-%d") }}"#);
        assert!(out.contains("unconverted data remains:  junk"), "{out}");
    }
}
