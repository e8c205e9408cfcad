//! Ansible's filters that roles rely on, beyond minijinja's built-ins.

use std::sync::{Mutex, OnceLock};

use minijinja::value::ValueKind;
use minijinja::value::{Kwargs, Rest};
use minijinja::{Error, ErrorKind, Value};
use regex::{Regex, RegexBuilder};
use sha2::Digest;

use super::error::UNDEFINED_NAME;

/// The placeholder that `omit` renders to; a parameter with this value is dropped.
pub const OMIT: &str = "__omit_place_holder__imgbuild__";

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// Registers every filter of this module on `env`.
pub fn register(env: &mut minijinja::Environment<'static>) {
    env.add_filter("d", minijinja::filters::default);
    env.add_filter("mandatory", mandatory);
    env.add_filter("bool", to_bool);
    env.add_filter("int", to_int);
    env.add_filter("float", to_float);
    env.add_filter("string", to_string);
    env.add_filter("regex_replace", regex_replace);
    env.add_filter("regex_search", regex_search);
    env.add_filter("regex_findall", regex_findall);
    env.add_filter("regex_escape", regex_escape);
    env.add_filter("basename", basename);
    env.add_filter("dirname", dirname);
    env.add_filter("split", split);
    env.add_filter("to_json", to_json);
    env.add_filter("to_nice_json", to_nice_json);
    env.add_filter("from_json", from_json);
    env.add_filter("to_yaml", to_yaml);
    env.add_filter("to_nice_yaml", to_nice_yaml);
    env.add_filter("from_yaml", from_yaml);
    env.add_filter("b64encode", super::b64_filters::b64encode);
    env.add_filter("b64decode", super::b64_filters::b64decode);
    env.add_filter("hash", hash);
    env.add_filter("sha1", |v: String| hash(v, Some("sha1".into())));
    env.add_filter("checksum", |v: String| hash(v, Some("sha1".into())));
    env.add_filter("ternary", ternary);
    env.add_filter("extract", extract);
    env.add_filter("quote", quote);
    env.add_filter("combine", super::combine_filter::combine);
    env.add_filter("version_sort", version_sort);
    env.add_filter("community.general.version_sort", version_sort);
}

/// Sorts version strings the way people read them: `1.9` before `1.10`.
fn version_sort(values: Vec<Value>) -> Vec<Value> {
    fn key(v: &str) -> Vec<(u64, String)> {
        let mut parts = Vec::new();
        let mut digits = String::new();
        let mut text = String::new();
        for c in v.chars() {
            if c.is_ascii_digit() {
                if !text.is_empty() {
                    parts.push((0, std::mem::take(&mut text)));
                }
                digits.push(c);
            } else {
                if !digits.is_empty() {
                    parts.push((digits.parse().unwrap_or(u64::MAX), String::new()));
                    digits.clear();
                }
                text.push(c);
            }
        }
        if !digits.is_empty() {
            parts.push((digits.parse().unwrap_or(u64::MAX), String::new()));
        }
        if !text.is_empty() {
            parts.push((0, text));
        }
        parts
    }
    let mut values = values;
    values.sort_by_key(|v| key(&v.to_string()));
    values
}

/// Ansible's truthiness of strings: `yes on 1 true y t` in any case.
pub fn ansible_bool_str(s: &str) -> bool {
    matches!(
        s.trim().to_ascii_lowercase().as_str(),
        "yes" | "on" | "1" | "true" | "y" | "t" | "1.0"
    )
}

/// `mandatory(msg=None)`: the value, or Ansible's failure for an undefined one (its filter
/// error, in its words, naming the variable; or `msg`).
fn mandatory(value: Value, msg: Option<String>) -> Result<Value, Error> {
    if value.is_undefined() {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            msg.unwrap_or_else(|| format!("Mandatory variable {UNDEFINED_NAME} not defined.")),
        ));
    }
    Ok(value)
}

/// `bool`: Ansible's truth of a word (`yes`, `on`, `1`, `true`) or the number 1; None stays None.
fn to_bool(value: Value) -> Value {
    if let Some(s) = value.as_str() {
        return Value::from(ansible_bool_str(s));
    }
    Value::from(match value.kind() {
        ValueKind::None => return value,
        ValueKind::Bool => value.is_true(),
        ValueKind::Number => f64::try_from(value).is_ok_and(|n| n == 1.0),
        _ => false,
    })
}

fn to_int(value: Value, default: Option<i64>, kwargs: Kwargs) -> Result<i64, Error> {
    let base: Option<u32> = kwargs.get("base")?;
    kwargs.assert_all_used()?;
    let default = default.unwrap_or(0);
    if let Some(s) = value.as_str() {
        let s = s.trim();
        let parsed = match base {
            Some(radix) => {
                let digits = s
                    .trim_start_matches("0x")
                    .trim_start_matches("0o")
                    .trim_start_matches("0b");
                i64::from_str_radix(digits, radix).ok()
            }
            None => s
                .parse::<i64>()
                .ok()
                .or_else(|| s.parse::<f64>().ok().map(|f| f as i64)),
        };
        return Ok(parsed.unwrap_or(default));
    }
    if let Ok(n) = i64::try_from(value.clone()) {
        return Ok(n);
    }
    if let Ok(f) = f64::try_from(value.clone()) {
        return Ok(f as i64);
    }
    Ok(default)
}

/// Jinja2's `float`: the number, or `default` (0.0) for what Python's `float()` refuses
/// (`'text' | float` is 0.0, not an error).
fn to_float(value: Value, default: Option<f64>) -> f64 {
    let default = default.unwrap_or(0.0);
    if let Some(s) = value.as_str() {
        return s.trim().replace('_', "").parse::<f64>().unwrap_or(default);
    }
    if value.kind() == ValueKind::Bool {
        return if value.is_true() { 1.0 } else { 0.0 };
    }
    f64::try_from(value).unwrap_or(default)
}

fn to_string(value: Value) -> String {
    if value.is_none() {
        return "None".into();
    }
    value.to_string()
}

fn cached_regex(pattern: &str, ignorecase: bool, multiline: bool) -> Result<Regex, Error> {
    type RegexCache = Vec<(String, bool, bool, Regex)>;
    static CACHE: OnceLock<Mutex<RegexCache>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, _, re)) = cache
        .iter()
        .find(|(p, i, m, _)| p == pattern && *i == ignorecase && *m == multiline)
    {
        return Ok(re.clone());
    }
    let re = RegexBuilder::new(pattern)
        .case_insensitive(ignorecase)
        .multi_line(multiline)
        .build()
        .map_err(|e| invalid(format!("bad regular expression {pattern:?}: {e}")))?;
    if cache.len() > 256 {
        cache.clear();
    }
    cache.push((pattern.to_owned(), ignorecase, multiline, re.clone()));
    Ok(re)
}

fn regex_flags(kwargs: &Kwargs) -> Result<(bool, bool), Error> {
    let ignorecase: Option<bool> = kwargs.get("ignorecase")?;
    let multiline: Option<bool> = kwargs.get("multiline")?;
    Ok((ignorecase.unwrap_or(false), multiline.unwrap_or(false)))
}

/// Python's `\1`, `\g<1>`, `\g<name>` backreferences in the regex crate's `${1}` syntax.
fn python_replacement(replacement: &str) -> String {
    let mut out = String::with_capacity(replacement.len());
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match chars.peek().copied() {
                Some(d) if d.is_ascii_digit() => {
                    let mut group = String::new();
                    while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                        group.push(d);
                        chars.next();
                    }
                    out.push_str(&format!("${{{group}}}"));
                }
                Some('g') => {
                    chars.next();
                    if chars.peek() == Some(&'<') {
                        chars.next();
                        let name: String = chars.by_ref().take_while(|c| *c != '>').collect();
                        out.push_str(&format!("${{{name}}}"));
                    } else {
                        out.push_str("\\g");
                    }
                }
                Some('n') => {
                    chars.next();
                    out.push('\n');
                }
                Some('t') => {
                    chars.next();
                    out.push('\t');
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    out
}

fn regex_replace(
    value: String,
    pattern: String,
    replacement: Option<String>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let (ignorecase, multiline) = regex_flags(&kwargs)?;
    let count: Option<usize> = kwargs.get("count")?;
    kwargs.assert_all_used()?;
    let re = cached_regex(&pattern, ignorecase, multiline)?;
    let replacement = python_replacement(&replacement.unwrap_or_default());
    Ok(re
        .replacen(&value, count.unwrap_or(0), replacement.as_str())
        .into_owned())
}

fn regex_search(
    value: String,
    pattern: String,
    groups: Rest<String>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let (ignorecase, multiline) = regex_flags(&kwargs)?;
    kwargs.assert_all_used()?;
    let re = cached_regex(&pattern, ignorecase, multiline)?;
    let Some(caps) = re.captures(&value) else {
        return Ok(Value::from(()));
    };
    if groups.is_empty() {
        return Ok(Value::from(
            caps.get(0).map(|m| m.as_str()).unwrap_or_default(),
        ));
    }
    let mut out = Vec::new();
    for group in groups.iter() {
        // `\g<name>` before `\N`: both start with a backslash.
        let text = if let Some(name) = group.strip_prefix("\\g<").and_then(|g| g.strip_suffix('>'))
        {
            caps.name(name)
        } else if let Some(n) = group.strip_prefix('\\') {
            let n: usize = n
                .parse()
                .map_err(|_| invalid(format!("bad group {group:?}")))?;
            caps.get(n)
        } else {
            return Err(invalid(format!(
                "bad group {group:?}; write '\\\\1' or '\\\\g<name>'"
            )));
        };
        out.push(Value::from(text.map(|m| m.as_str()).unwrap_or_default()));
    }
    Ok(Value::from(out))
}

fn regex_findall(value: String, pattern: String, kwargs: Kwargs) -> Result<Value, Error> {
    let (ignorecase, multiline) = regex_flags(&kwargs)?;
    kwargs.assert_all_used()?;
    let re = cached_regex(&pattern, ignorecase, multiline)?;
    let found: Vec<Value> = re
        .captures_iter(&value)
        .map(|caps| match caps.len() {
            1 => Value::from(caps.get(0).map(|m| m.as_str()).unwrap_or_default()),
            2 => Value::from(caps.get(1).map(|m| m.as_str()).unwrap_or_default()),
            _ => Value::from(
                caps.iter()
                    .skip(1)
                    .map(|m| Value::from(m.map(|m| m.as_str()).unwrap_or_default()))
                    .collect::<Vec<_>>(),
            ),
        })
        .collect();
    Ok(Value::from(found))
}

/// Ansible's `regex_escape(re_type='python')`: Python's `re.escape`, or the POSIX basic
/// special characters escaped.
fn regex_escape(value: String, re_type: Option<String>, kwargs: Kwargs) -> Result<String, Error> {
    let re_type = kwargs.get::<Option<String>>("re_type")?.or(re_type);
    kwargs.assert_all_used()?;
    let special: &[char] = match re_type.as_deref().unwrap_or("python") {
        "python" => &[
            '(', ')', '[', ']', '{', '}', '?', '*', '+', '-', '|', '^', '$', '\\', '.', '&', '~',
            '#', ' ', '\t', '\n', '\r', '\u{b}', '\u{c}',
        ],
        "posix_basic" => &[']', '.', '[', '^', '$', '*', '\\'],
        "posix_extended" => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                "Regex type (posix_extended) not yet implemented",
            ))
        }
        other => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("Invalid regex type ({other})"),
            ))
        }
    };
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if special.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    Ok(out)
}

/// Python's `os.path.basename`.
fn basename(path: String) -> String {
    path.rsplit('/').next().unwrap_or_default().to_owned()
}

/// Python's `os.path.dirname`.
fn dirname(path: String) -> String {
    match path.rfind('/') {
        None => String::new(),
        Some(i) => {
            let head = &path[..=i];
            let trimmed = head.trim_end_matches('/');
            if trimmed.is_empty() {
                head.to_owned()
            } else {
                trimmed.to_owned()
            }
        }
    }
}

/// Python's `str.split(sep=None, maxsplit=-1)`.
fn split(value: String, sep: Option<String>, maxsplit: Option<i64>) -> Result<Value, Error> {
    let limit = maxsplit.filter(|n| *n >= 0).map(|n| n as usize + 1);
    let parts: Vec<Value> = match sep.as_deref() {
        None => match limit {
            None => value.split_whitespace().map(Value::from).collect(),
            Some(limit) => {
                let mut parts = Vec::new();
                let mut rest = value.trim_start();
                while !rest.is_empty() {
                    if parts.len() + 1 == limit {
                        parts.push(Value::from(rest));
                        break;
                    }
                    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                    parts.push(Value::from(&rest[..end]));
                    rest = rest[end..].trim_start();
                }
                parts
            }
        },
        Some("") => return Err(invalid("split: empty separator")),
        Some(sep) => match limit {
            None => value.split(sep).map(Value::from).collect(),
            Some(limit) => value.splitn(limit, sep).map(Value::from).collect(),
        },
    };
    Ok(Value::from(parts))
}

fn json_of(value: &Value) -> Result<serde_json::Value, Error> {
    serde_json::to_value(value).map_err(|e| invalid(format!("cannot convert to JSON: {e}")))
}

/// `to_json`: Python's `json.dumps` (`", "` and `": "`, ASCII only unless told).
fn to_json(value: Value, kwargs: Kwargs) -> Result<String, Error> {
    let sort_keys: Option<bool> = kwargs.get("sort_keys")?;
    let ensure_ascii: Option<bool> = kwargs.get("ensure_ascii")?;
    let indent: Option<usize> = kwargs.get("indent")?;
    kwargs.assert_all_used()?;
    let dumps = crate::pyjson::Dumps {
        indent,
        sort_keys: sort_keys.unwrap_or(false),
        ensure_ascii: ensure_ascii.unwrap_or(true),
    };
    Ok(dumps.dumps(&json_of(&value)?))
}

/// `to_nice_json`: four spaces and sorted keys unless told otherwise.
fn to_nice_json(value: Value, kwargs: Kwargs) -> Result<String, Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let sort_keys: Option<bool> = kwargs.get("sort_keys")?;
    kwargs.assert_all_used()?;
    let mut dumps = crate::pyjson::Dumps::nice(indent.unwrap_or(4));
    dumps.sort_keys = sort_keys.unwrap_or(true);
    Ok(dumps.dumps(&json_of(&value)?))
}

fn from_json(value: String) -> Result<Value, Error> {
    let json: serde_json::Value =
        serde_json::from_str(&value).map_err(|e| invalid(format!("from_json: not JSON: {e}")))?;
    Ok(Value::from_serialize(&json))
}

/// `to_yaml`: PyYAML's dump with `default_flow_style=None`.
fn to_yaml(value: Value, kwargs: Kwargs) -> Result<String, Error> {
    yaml_dump(value, kwargs, 2, false)
}

/// `to_nice_yaml`: PyYAML's dump in block style, four spaces.
fn to_nice_yaml(value: Value, kwargs: Kwargs) -> Result<String, Error> {
    yaml_dump(value, kwargs, 4, true)
}

fn yaml_dump(
    value: Value,
    kwargs: Kwargs,
    indent: usize,
    block_only: bool,
) -> Result<String, Error> {
    let indent: usize = kwargs.get::<Option<usize>>("indent")?.unwrap_or(indent);
    let _: Option<usize> = kwargs.get("width")?;
    let flow: Option<bool> = kwargs.get("default_flow_style")?;
    let sort_keys: Option<bool> = kwargs.get("sort_keys")?;
    kwargs.assert_all_used()?;
    let dump = crate::pyyaml::Dump {
        indent,
        block_only: block_only || flow == Some(false),
        sort_keys: sort_keys.unwrap_or(true),
    };
    Ok(dump.dump(&json_of(&value)?))
}

fn from_yaml(value: String) -> Result<Value, Error> {
    let node = crate::yaml::parse(&value).map_err(|e| invalid(format!("from_yaml: {e}")))?;
    Ok(Value::from_serialize(node.to_json()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hash(value: String, algorithm: Option<String>) -> Result<String, Error> {
    let algorithm = algorithm.unwrap_or_else(|| "sha1".into());
    let data = value.as_bytes();
    Ok(match algorithm.as_str() {
        "md5" => hex(&md5::Md5::digest(data)),
        "sha1" => hex(&sha1::Sha1::digest(data)),
        "sha224" => hex(&sha2::Sha224::digest(data)),
        "sha256" => hex(&sha2::Sha256::digest(data)),
        "sha384" => hex(&sha2::Sha384::digest(data)),
        "sha512" => hex(&sha2::Sha512::digest(data)),
        other => {
            return Err(invalid(format!(
                "unsupported hash type {other} (Python's hashlib's words; imgbuild has md5, sha1, sha224, sha256, sha384 and sha512)"
            )))
        }
    })
}

/// `extract(container, morekeys=None)`: `container[item]`, then each of `morekeys` (a list, or
/// one key) in turn, read as Jinja's `getitem` reads them (an item, else an attribute, else
/// undefined). Native, so that a lazy mapping (`hostvars`) is read where it is, not copied to
/// Python.
fn extract(item: Value, container: Value, morekeys: Option<Value>) -> Result<Value, Error> {
    let mut keys = vec![item];
    match morekeys {
        None => {}
        Some(more) if more.kind() == ValueKind::Seq => keys.extend(more.try_iter()?),
        Some(more) => keys.push(more),
    }
    // Ansible's undefined gives itself for any item, and a key that is not there is undefined:
    // `| default()` after it decides.
    Ok(keys.into_iter().fold(container, |value, key| {
        if value.is_undefined() {
            return value;
        }
        let found = value.get_item(&key).unwrap_or(Value::UNDEFINED);
        match (found.is_undefined(), key.as_str()) {
            (true, Some(name)) => value.get_attr(name).unwrap_or(Value::UNDEFINED),
            _ => found,
        }
    }))
}

fn ternary(value: Value, yes: Value, no: Value, none: Option<Value>) -> Value {
    match (value.is_none(), none) {
        (true, Some(none)) => none,
        _ if value.is_true() => yes,
        _ => no,
    }
}

/// The `quote` filter: None is the empty word, as Ansible's.
fn quote(value: Value) -> String {
    let text = match value.kind() {
        ValueKind::None => String::new(),
        ValueKind::Bool => if value.is_true() { "True" } else { "False" }.to_owned(),
        _ => value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_owned),
    };
    shlex_quote(&text)
}

/// Python's `shlex.quote`: a word as the shell reads it back unchanged.
pub fn shlex_quote(value: &str) -> String {
    let safe = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c));
    if safe {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', "'\"'\"'"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_backrefs() {
        assert_eq!(
            python_replacement(r"\1-\g<2>-\g<name>$"),
            "${1}-${2}-${name}$$"
        );
    }

    #[test]
    fn float_is_jinjas_with_its_default_for_text() {
        assert_eq!(to_float(Value::from("text"), None), 0.0);
        assert_eq!(to_float(Value::from("text"), Some(1.5)), 1.5);
        assert_eq!(to_float(Value::from(" 2.5 "), None), 2.5);
        assert_eq!(to_float(Value::from("1_000"), None), 1000.0);
        assert_eq!(to_float(Value::from(3), None), 3.0);
        assert_eq!(to_float(Value::from(true), None), 1.0);
        assert_eq!(to_float(Value::from(()), None), 0.0);
    }

    #[test]
    fn path_helpers_match_python() {
        assert_eq!(basename("/a/b.tgz".into()), "b.tgz");
        assert_eq!(basename("/a/b/".into()), "");
        assert_eq!(dirname("/a/b".into()), "/a");
        assert_eq!(dirname("/a".into()), "/");
        assert_eq!(dirname("a".into()), "");
    }

    #[test]
    fn quote_matches_shlex() {
        assert_eq!(quote(Value::from("abc")), "abc");
        assert_eq!(quote(Value::from("a b")), "'a b'");
        assert_eq!(quote(Value::from("it's")), "'it'\"'\"'s'");
        assert_eq!(quote(Value::from(())), "''");
        assert_eq!(quote(Value::from(true)), "True");
        assert_eq!(quote(Value::from(12)), "12");
    }

    #[test]
    fn bool_strings() {
        assert!(ansible_bool_str("Yes"));
        assert!(ansible_bool_str("y"));
        assert!(!ansible_bool_str("no"));
        assert!(!ansible_bool_str("banana"));
    }

    #[test]
    fn regex_escape_is_pythons_re_escape_or_posix_basic() {
        let mut env = minijinja::Environment::new();
        env.add_filter("regex_escape", regex_escape);
        let render = |t: &str| env.render_str(t, ()).map_err(|e| e.to_string());
        // python3 -c 'import re; print(re.escape("a.b c\t-~#&_é/"))'
        assert_eq!(
            render("{{ 'a.b c\t-~#&_é/'|regex_escape }}").as_deref(),
            Ok("a\\.b\\ c\\\t\\-\\~\\#\\&_é/")
        );
        assert_eq!(
            render("{{ ']]^.x'|regex_escape(re_type='posix_basic') }}").as_deref(),
            Ok("\\]\\]\\^\\.x")
        );
        for (re_type, message) in [
            (
                "posix_extended",
                "Regex type (posix_extended) not yet implemented",
            ),
            ("haha", "Invalid regex type (haha)"),
        ] {
            let out = render(&format!("{{{{ 'x'|regex_escape('{re_type}') }}}}"));
            assert!(out.as_ref().is_err_and(|e| e.contains(message)), "{out:?}");
        }
    }
}
