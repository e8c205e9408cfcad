//! Ansible's `urldecode` (Python's `unquote_plus`), Jinja2's `urlencode`, and `urlsplit` (Python's `urlsplit`, as a
//! mapping or one part) filters, with `realpath` and Ansible's `unique`, refused in Python's
//! words.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// Python's `unquote_plus`: `+` is a space, `%XX` a byte, the bytes read as UTF-8.
pub fn urldecode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) if hex.chars().all(|c| c.is_ascii_hexdigit()) => {
                        out.push(b);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Python's `quote`: every byte but letters, digits, `_.-~` and `safe` as `%XX`.
fn quote(text: &str, safe: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"_.-~".contains(&b) || safe.as_bytes().contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Text as Python's `str()` writes it, for `urlencode`.
fn py_text(value: &Value) -> String {
    match value.as_str() {
        Some(s) => s.to_owned(),
        None if value.kind() == ValueKind::Bool => {
            if value.is_true() { "True" } else { "False" }.to_owned()
        }
        None if value.is_none() => "None".to_owned(),
        None => value.to_string(),
    }
}

/// Jinja2's `urlencode`: text quoted (keeping `/`); a mapping or a list of pairs as a query
/// string (`k=v&k2=v2`, spaces as `+`).
pub fn urlencode(value: Value) -> Result<String, Error> {
    let pairs: Vec<(Value, Value)> = match value.kind() {
        ValueKind::Map => value
            .try_iter()?
            .map(|k| {
                let v = value.get_item(&k)?;
                Ok((k, v))
            })
            .collect::<Result<_, Error>>()?,
        ValueKind::Seq | ValueKind::Iterable => value
            .try_iter()?
            .map(|pair| {
                Ok((
                    pair.get_item(&Value::from(0))?,
                    pair.get_item(&Value::from(1))?,
                ))
            })
            .collect::<Result<_, Error>>()?,
        _ => return Ok(quote(&py_text(&value), "/")),
    };
    let for_qs = |v: &Value| quote(&py_text(v), "").replace("%20", "+");
    Ok(pairs
        .iter()
        .map(|(k, v)| format!("{}={}", for_qs(k), for_qs(v)))
        .collect::<Vec<_>>()
        .join("&"))
}

/// The parts of a URL as Python's `urlsplit` gives them.
struct Parts {
    scheme: String,
    netloc: String,
    path: String,
    query: String,
    fragment: String,
}

fn split(url: &str) -> Parts {
    let mut rest = url;
    let mut scheme = String::new();
    if let Some(colon) = url.find(':') {
        let candidate = &url[..colon];
        let valid = candidate
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && candidate
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
        if valid {
            scheme = candidate.to_ascii_lowercase();
            rest = &url[colon + 1..];
        }
    }
    let mut netloc = String::new();
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find(['/', '?', '#']).unwrap_or(after.len());
        netloc = after[..end].to_owned();
        rest = &after[end..];
    }
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    Parts {
        scheme,
        netloc,
        path: path.to_owned(),
        query: query.to_owned(),
        fragment: fragment.to_owned(),
    }
}

/// `username`, `password`, `hostname` and `port` of a netloc, as Python's `SplitResult`.
fn netloc_parts(netloc: &str) -> Result<[Value; 4], Error> {
    let none = || Value::from(());
    let (userinfo, host) = match netloc.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, netloc),
    };
    let (username, password) = match userinfo {
        Some(info) => match info.split_once(':') {
            Some((u, p)) => (Value::from(u), Value::from(p)),
            None => (Value::from(info), none()),
        },
        None => (none(), none()),
    };
    let (hostname, port) = if let Some(bracketed) = host.strip_prefix('[') {
        let (inside, after) = bracketed.split_once(']').unwrap_or((bracketed, ""));
        (inside, after.strip_prefix(':').unwrap_or(""))
    } else {
        host.split_once(':').unwrap_or((host, ""))
    };
    let hostname = if hostname.is_empty() {
        none()
    } else {
        Value::from(hostname.to_ascii_lowercase())
    };
    let port = match port {
        "" => none(),
        digits => match digits.parse::<u32>() {
            Ok(n) if n <= 65535 && digits.chars().all(|c| c.is_ascii_digit()) => Value::from(n),
            _ => {
                return Err(invalid(format!(
                    "Port could not be cast to integer value as '{digits}'"
                )))
            }
        },
    };
    Ok([username, password, hostname, port])
}

/// `url | urlsplit` (the mapping of every part) or `url | urlsplit('hostname')`.
pub fn urlsplit(url: String, query: Option<String>) -> Result<Value, Error> {
    let parts = split(&url);
    let [username, password, hostname, port] = netloc_parts(&parts.netloc)?;
    let all = [
        ("fragment", Value::from(parts.fragment)),
        ("hostname", hostname),
        ("netloc", Value::from(parts.netloc)),
        ("password", password),
        ("path", Value::from(parts.path)),
        ("port", port),
        ("query", Value::from(parts.query)),
        ("scheme", Value::from(parts.scheme)),
        ("username", username),
    ];
    match query.filter(|q| !q.is_empty()) {
        None => Ok(Value::from_iter(all)),
        Some(q) => all
            .into_iter()
            .find(|(name, _)| *name == q)
            .map(|(_, v)| v)
            .ok_or_else(|| invalid(format!("urlsplit: unknown URL component: {q}"))),
    }
}

/// Python's `os.path.realpath` on the machine running the build, as Ansible's filter runs on
/// its controller: links resolved as far as the path exists, the rest kept.
pub fn realpath(path: String) -> String {
    let path = std::path::Path::new(&path);
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    // The longest existing prefix, canonicalised; what follows is joined as written.
    let mut existing = absolute.clone();
    let mut tail = Vec::new();
    while std::fs::canonicalize(&existing).is_err() {
        let Some(name) = existing.file_name().map(|n| n.to_owned()) else {
            break;
        };
        tail.push(name);
        existing.pop();
    }
    let mut out = std::fs::canonicalize(&existing).unwrap_or(existing);
    for name in tail.into_iter().rev() {
        if name == ".." {
            out.pop();
        } else if name != "." {
            out.push(name);
        }
    }
    out.display().to_string()
}

/// Python's name for a value's type in `'int' object is not iterable`.
fn type_name(value: &Value) -> &'static str {
    match value.kind() {
        ValueKind::Bool => "bool",
        ValueKind::Number if value.is_integer() => "int",
        ValueKind::Number => "float",
        ValueKind::None => "NoneType",
        _ => "object",
    }
}

/// Ansible's `unique` (Jinja2's, with `case_sensitive` and `attribute`): each item once, in
/// order.
pub fn unique(items: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let case_given: Option<bool> = kwargs.get("case_sensitive")?;
    let case_sensitive = case_given.unwrap_or(false);
    let attribute: Option<Value> = kwargs.get("attribute")?;
    kwargs.assert_all_used()?;
    if !matches!(
        items.kind(),
        ValueKind::Seq | ValueKind::Iterable | ValueKind::Map | ValueKind::String
    ) {
        return Err(invalid(format!(
            "'{}' object is not iterable",
            type_name(&items)
        )));
    }
    let key = |item: &Value| -> Result<Value, Error> {
        let item = match &attribute {
            Some(attr) => match attr.as_str() {
                Some(path) => path
                    .split('.')
                    .try_fold(item.clone(), |v, part| v.get_attr(part))?,
                None => item.get_item(attr)?,
            },
            None => item.clone(),
        };
        Ok(match item.as_str() {
            Some(s) if !case_sensitive => Value::from(s.to_lowercase()),
            _ => item,
        })
    };
    // Jinja2's unique hashes what it compares (the attribute's value where one is given):
    // mappings and lists fail it, and Ansible falls back to its own unique only without
    // case_sensitive=False or attribute.
    let unhashable = items
        .try_iter()?
        .any(|i| key(&i).is_ok_and(|k| matches!(k.kind(), ValueKind::Map | ValueKind::Seq)));
    if unhashable && (case_given == Some(false) || attribute.is_some()) {
        return Err(invalid(
            "Jinja2's unique filter failed and we cannot fall back to Ansible's version as it does not support the parameters supplied",
        ));
    }
    let mut seen: Vec<Value> = Vec::new();
    let mut out = Vec::new();
    for item in items.try_iter()? {
        let k = key(&item)?;
        if !seen.contains(&k) {
            seen.push(k);
            out.push(item);
        }
    }
    Ok(Value::from(out))
}

/// Python's `os.path.expanduser`, which Ansible's filter runs on the controller: a leading
/// `~` is `$HOME` (the account's home when unset), `~name` that user's home; anything else, or
/// an unknown user, stays as written.
pub fn expanduser(path: &str, home_of: &dyn Fn(Option<&str>) -> Option<String>) -> String {
    let Some(rest) = path.strip_prefix('~') else {
        return path.to_owned();
    };
    let (name, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let home = if name.is_empty() {
        std::env::var("HOME").ok().or_else(|| home_of(None))
    } else {
        home_of(Some(name))
    };
    match home {
        Some(home) => {
            let home = home.trim_end_matches('/');
            let home = if home.is_empty() { "/" } else { home };
            if tail.is_empty() {
                home.to_owned()
            } else {
                format!("{}{tail}", home.trim_end_matches('/'))
            }
        }
        None => path.to_owned(),
    }
}

/// The home of `name` (of the account running imgbuild when `None`) in the controller's
/// `/etc/passwd`.
fn home_of(name: Option<&str>) -> Option<String> {
    let uid = process_uid();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        let wanted = match name {
            Some(n) => f.first() == Some(&n),
            None => f.get(2).and_then(|u| u.parse::<u32>().ok()) == uid,
        };
        (wanted && f.len() >= 7).then(|| f[5].to_owned())
    })
}

/// The real uid of this process, from `/proc/self/status`.
fn process_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().next())
        .and_then(|uid| uid.parse().ok())
}

/// Registers these filters on `env`.
pub fn register(env: &mut minijinja::Environment<'static>) {
    env.add_filter("urldecode", |s: String| urldecode(&s));
    env.add_filter("urlencode", urlencode);
    env.add_filter("urlsplit", urlsplit);
    env.add_filter("realpath", realpath);
    env.add_filter("expanduser", |path: String| expanduser(&path, &home_of));
    env.add_filter("unique", unique);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expanduser_replaces_a_leading_tilde_only() {
        let homes = |name: Option<&str>| match name {
            Some("alice") => Some("/home/alice".to_owned()),
            _ => None,
        };
        assert_eq!(expanduser("/tmp/x", &homes), "/tmp/x");
        assert_eq!(expanduser("~alice/x", &homes), "/home/alice/x");
        assert_eq!(expanduser("~alice", &homes), "/home/alice");
        assert_eq!(expanduser("~bob/x", &homes), "~bob/x");
        assert_eq!(expanduser("a/~alice", &homes), "a/~alice");
    }

    #[test]
    fn urldecode_is_unquote_plus() {
        assert_eq!(
            urldecode("a%20b+c%C3%A9%zz%"),
            "a b+cé%zz%".replace('+', " ")
        );
        assert_eq!(urldecode("key%3D%22%40"), "key=\"@");
    }

    #[test]
    fn urlencode_is_jinja2s() {
        assert_eq!(
            urlencode(Value::from("key=\"@é/ a")).ok().as_deref(),
            Some("key%3D%22%40%C3%A9/%20a")
        );
        let map = Value::from_serialize(serde_json::json!({"foo": "bar", "baz": "a b"}));
        assert_eq!(urlencode(map).ok().as_deref(), Some("foo=bar&baz=a+b"));
        assert_eq!(
            urlencode(Value::from(Vec::<Value>::new())).ok().as_deref(),
            Some("")
        );
    }

    #[test]
    fn urlsplit_gives_pythons_parts() {
        let url = "http://mary:MySecret@www.Acme.com:9000/dir/index.html?query=term#fragment";
        let all = urlsplit(url.into(), None).expect("urlsplit");
        assert_eq!(
            all.get_attr("hostname").ok(),
            Some(Value::from("www.acme.com"))
        );
        assert_eq!(all.get_attr("port").ok(), Some(Value::from(9000)));
        assert_eq!(all.get_attr("password").ok(), Some(Value::from("MySecret")));
        assert_eq!(all.get_attr("query").ok(), Some(Value::from("query=term")));
        assert_eq!(
            urlsplit(url.into(), Some("path".into())).ok(),
            Some(Value::from("/dir/index.html"))
        );
        let err = urlsplit(url.into(), Some("bad_filter".into())).expect_err("unknown");
        assert!(err
            .to_string()
            .contains("unknown URL component: bad_filter"));
        let bare = urlsplit("/just/a/path".into(), None).expect("path");
        assert!(bare.get_attr("hostname").is_ok_and(|h| h.is_none()));
    }

    #[test]
    fn unique_words_errors_as_python() {
        let err = unique(
            Value::from(true),
            Kwargs::from_iter(Vec::<(&str, Value)>::new()),
        )
        .expect_err("not iterable");
        assert!(err.to_string().contains("'bool' object is not iterable"));
        let got = unique(
            Value::from(vec!["a", "A", "b", "a"]),
            Kwargs::from_iter(Vec::<(&str, Value)>::new()),
        )
        .expect("unique");
        assert_eq!(got, Value::from(vec!["a", "b"]));
        let records = Value::from_serialize(serde_json::json!([
            {"foo": "bar", "moo": "cow"}, {"foo": "bar", "moo": "mar"}
        ]));
        let by_foo = unique(
            records.clone(),
            Kwargs::from_iter([("attribute", Value::from("foo"))]),
        );
        assert_eq!(by_foo.expect("hashable attribute").len(), Some(1));
        let whole = unique(
            records,
            Kwargs::from_iter([("case_sensitive", Value::from(false))]),
        );
        assert!(whole.is_err(), "mappings are not hashable");
        assert_eq!(realpath("/".into()), "/");
    }
}
