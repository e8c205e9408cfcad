//! `lookup('sequence', ...)` and `with_sequence`, as ansible-core 2.14 counts: `key=value`
//! terms (`start=0 end=32 stride=2 format=host%02x`, `count=4`) or the shortcut
//! `[start-]end[/stride][:format]`, numbers in Python's `int(x, 0)` forms, and Ansible's words
//! for every refusal.

use std::sync::OnceLock;

use minijinja::{Error, Value};
use regex::Regex;

use super::lookup_state::lookup_failed;

/// One term's settings, Ansible's defaults until the term says otherwise.
struct Sequence {
    start: i64,
    end: Option<i64>,
    count: Option<i64>,
    stride: i64,
    format: String,
}

impl Default for Sequence {
    fn default() -> Self {
        Sequence {
            start: 1,
            end: None,
            count: None,
            stride: 1,
            format: "%d".into(),
        }
    }
}

/// Python's `int(text, 0)`: decimal without leading zeros, or `0x`, `0o`, `0b` prefixed.
fn python_int(text: &str) -> Option<i64> {
    let text = text.trim().replace('_', "");
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(&text)),
    };
    let lower = digits.to_ascii_lowercase();
    let magnitude = if let Some(hex) = lower.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()?
    } else if let Some(oct) = lower.strip_prefix("0o") {
        i64::from_str_radix(oct, 8).ok()?
    } else if let Some(bin) = lower.strip_prefix("0b") {
        i64::from_str_radix(bin, 2).ok()?
    } else if lower.len() > 1 && lower.starts_with('0') && lower.chars().any(|c| c != '0') {
        return None;
    } else {
        if lower.is_empty() || !lower.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        lower.parse().ok()?
    };
    Some(if negative { -magnitude } else { magnitude })
}

fn parse_number(name: &str, raw: &str) -> Result<i64, Error> {
    python_int(raw).ok_or_else(|| lookup_failed(format!("can't parse {name}={raw} as integer")))
}

fn shortcut() -> &'static Regex {
    static SHORTCUT: OnceLock<Regex> = OnceLock::new();
    SHORTCUT.get_or_init(|| {
        let num = "(0?x?[0-9a-f]+)";
        Regex::new(&format!("(?i)^({num}-)?{num}(/{num})?(:(.+))?$"))
            .unwrap_or_else(|_| unreachable!("a fixed pattern"))
    })
}

impl Sequence {
    /// The shortcut form; `Ok(false)`: `term` is not one.
    fn parse_shortcut(&mut self, term: &str) -> Result<bool, Error> {
        let Some(caps) = shortcut().captures(term) else {
            return Ok(false);
        };
        if let Some(start) = caps.get(2) {
            self.start = parse_number("start", start.as_str())?;
        }
        if let Some(end) = caps.get(3) {
            self.end = Some(parse_number("end", end.as_str())?);
        }
        if let Some(stride) = caps.get(5) {
            self.stride = parse_number("stride", stride.as_str())?;
        }
        if let Some(format) = caps.get(7) {
            self.format = format.as_str().to_owned();
        }
        Ok(true)
    }

    /// The `key=value` form.
    fn parse_key_values(&mut self, term: &str) -> Result<(), Error> {
        let mut args = super::lookup_files::parse_kv(term);
        for name in ["start", "end", "count", "stride"] {
            let Some(raw) = args.shift_remove(name) else {
                continue;
            };
            let n = parse_number(name, &raw)?;
            match name {
                "start" => self.start = n,
                "end" => self.end = Some(n),
                "count" => self.count = Some(n),
                _ => self.stride = n,
            }
        }
        if let Some(format) = args.shift_remove("format") {
            self.format = format;
        }
        if !args.is_empty() {
            let names: Vec<String> = args.keys().map(|k| format!("'{k}'")).collect();
            return Err(lookup_failed(format!(
                "unrecognized arguments to with_sequence: [{}]",
                names.join(", ")
            )));
        }
        Ok(())
    }

    /// Ansible's `sanity_check`: `count` made an `end`, and the direction checked.
    fn check(&mut self) -> Result<(i64, i64, i64), Error> {
        let (start, end, stride) = match (self.count, self.end) {
            (None, None) => {
                return Err(lookup_failed("must specify count or end in with_sequence"))
            }
            (Some(_), Some(_)) => {
                return Err(lookup_failed(
                    "can't specify both count and end in with_sequence",
                ))
            }
            (Some(0), None) => (0, 0, 0),
            (Some(count), None) => (
                self.start,
                self.start + count * self.stride - 1,
                self.stride,
            ),
            (None, Some(end)) => (self.start, end, self.stride),
        };
        if stride > 0 && end < start {
            return Err(lookup_failed("to count backwards make stride negative"));
        }
        if stride < 0 && end > start {
            return Err(lookup_failed("to count forward don't make stride negative"));
        }
        if self.format.matches('%').count() != 1 {
            return Err(lookup_failed(format!(
                "bad formatting string: {}",
                self.format
            )));
        }
        Ok((start, end, stride))
    }
}

/// The items of `lookup('sequence', term, ...)`: text, formatted as each term says.
pub fn sequence(terms: &[Value]) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for term in terms {
        let term = term
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| term.to_string());
        let mut seq = Sequence::default();
        if !seq.parse_shortcut(&term)? {
            seq.parse_key_values(&term)?;
        }
        let (start, end, stride) = seq.check()?;
        if stride == 0 {
            continue;
        }
        let mut n = start;
        while (stride > 0 && n <= end) || (stride < 0 && n >= end) {
            let text = percent_format(&seq.format, n).ok_or_else(|| {
                lookup_failed(format!("problem formatting {n} with '{}'", seq.format))
            })?;
            out.push(Value::from(text));
            n += stride;
        }
    }
    Ok(out)
}

/// Python's `format % n` for a format with one conversion (`%d`, `%05x`, `%-4o`, `%#x`,
/// `%s`, ...); `None` where Python would raise.
pub fn percent_format(format: &str, n: i64) -> Option<String> {
    let at = format.find('%')?;
    let spec = &format[at + 1..];
    let flags: String = spec.chars().take_while(|c| "-+ #0".contains(*c)).collect();
    let rest = &spec[flags.len()..];
    let width: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let rest = &rest[width.len()..];
    let (precision, rest) = match rest.strip_prefix('.') {
        Some(p) => {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            (
                Some(digits.parse::<usize>().unwrap_or(0)),
                &p[digits.len()..],
            )
        }
        None => (None, rest),
    };
    let conv = rest.chars().next()?;
    let tail = &rest[conv.len_utf8()..];
    let alt = flags.contains('#');
    let mut digits = match conv {
        'd' | 'i' | 'u' | 's' | 'r' => n.unsigned_abs().to_string(),
        'x' => format!("{}{:x}", if alt { "0x" } else { "" }, n.unsigned_abs()),
        'X' => format!("{}{:X}", if alt { "0X" } else { "" }, n.unsigned_abs()),
        'o' => format!("{}{:o}", if alt { "0o" } else { "" }, n.unsigned_abs()),
        'f' | 'F' => format!("{:.*}", precision.unwrap_or(6), n.unsigned_abs() as f64),
        'c' => char::from_u32(u32::try_from(n).ok()?)?.to_string(),
        _ => return None,
    };
    if let (Some(p), 'd' | 'i' | 'u' | 'x' | 'X' | 'o') = (precision, conv) {
        while digits.len() < p {
            digits.insert(0, '0');
        }
    }
    let sign = match (
        n < 0 && conv != 'c',
        flags.contains('+'),
        flags.contains(' '),
    ) {
        (true, _, _) => "-",
        (false, true, _) if conv != 's' && conv != 'r' => "+",
        (false, false, true) if conv != 's' && conv != 'r' => " ",
        _ => "",
    };
    let width: usize = width.parse().unwrap_or(0);
    let body_len = sign.len() + digits.chars().count();
    let pad = width.saturating_sub(body_len);
    let body = if flags.contains('-') {
        format!("{sign}{digits}{}", " ".repeat(pad))
    } else if flags.contains('0') && !matches!(conv, 's' | 'r' | 'c') {
        format!("{sign}{}{digits}", "0".repeat(pad))
    } else {
        format!("{}{sign}{digits}", " ".repeat(pad))
    };
    Some(format!("{}{body}{tail}", &format[..at]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(term: &str) -> Result<Vec<String>, String> {
        sequence(&[Value::from(term)])
            .map(|v| v.iter().map(|i| i.to_string()).collect())
            .map_err(|e| e.detail().unwrap_or_default().to_owned())
    }

    #[test]
    fn key_value_and_shortcut_forms_count_as_ansible() {
        assert_eq!(
            run("start=1 end=3 format=n%02d").unwrap_or_default(),
            ["n01", "n02", "n03"]
        );
        assert_eq!(
            run("start=3 end=0 stride=-1").unwrap_or_default(),
            ["3", "2", "1", "0"]
        );
        assert_eq!(
            run("start=0 count=5 stride=2").unwrap_or_default(),
            ["0", "2", "4", "6", "8"]
        );
        assert_eq!(run("count=0").unwrap_or_default(), Vec::<String>::new());
        assert_eq!(run("4").unwrap_or_default(), ["1", "2", "3", "4"]);
        assert_eq!(run("2-6/2").unwrap_or_default(), ["2", "4", "6"]);
        assert_eq!(
            run("7-8:host%02d").unwrap_or_default(),
            ["host07", "host08"]
        );
        assert_eq!(
            run("start=0x0f00 count=2 format=%04x").unwrap_or_default(),
            ["0f00", "0f01"]
        );
    }

    #[test]
    fn refusals_use_ansibles_words() {
        let err = |t: &str| run(t).err().unwrap_or_default();
        assert_eq!(
            err("start=0 junk=3"),
            "unrecognized arguments to with_sequence: ['junk']"
        );
        assert_eq!(err("start=A end=3"), "can't parse start=A as integer");
        assert_eq!(err("A-4/2"), "can't parse start=A as integer");
        assert_eq!(err("1-B/2"), "can't parse end=B as integer");
        assert_eq!(err("1-4/C"), "can't parse stride=C as integer");
        assert_eq!(err("start=1"), "must specify count or end in with_sequence");
        assert_eq!(
            err("start=1 end=4 count=2"),
            "can't specify both count and end in with_sequence"
        );
        assert_eq!(
            err("start=4 end=1 stride=2"),
            "to count backwards make stride negative"
        );
        assert_eq!(
            err("start=1 end=4 stride=-2"),
            "to count forward don't make stride negative"
        );
        assert_eq!(err("start=1 end=4 format=d"), "bad formatting string: d");
    }

    #[test]
    fn percent_formats_as_python() {
        assert_eq!(percent_format("%5d|", 42).as_deref(), Some("   42|"));
        assert_eq!(percent_format("%-5d|", -4).as_deref(), Some("-4   |"));
        assert_eq!(percent_format("%#x", 255).as_deref(), Some("0xff"));
        assert_eq!(percent_format("%+03d", 7).as_deref(), Some("+07"));
        assert_eq!(percent_format("%q", 7), None);
    }
}
