//! Filters and tests where Ansible's Jinja2 (Python) and minijinja differ in arguments or
//! results: `replace` with a count, `round` as Python rounds, `min`/`max`/`sum` by attribute,
//! `flatten(levels=)`, `splitext`, `zip_longest`, `type_debug`, `log`/`root`/`pow`, `md5`,
//! and the `contains` test and `match`/`search`/`regex` with `ignorecase`/`multiline`.

use minijinja::value::{Kwargs, Rest, ValueKind};
use minijinja::{Error, ErrorKind, Value};

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// `replace(old, new, count)`: at most `count` replacements when given.
fn replace(value: String, old: String, new: String, count: Option<usize>) -> String {
    match count {
        Some(n) => value.replacen(&old, &new, n),
        None => value.replace(&old, &new),
    }
}

/// `round(precision=0, method='common')`: 'common' is Python's round (half to even).
fn round(value: f64, precision: Option<i32>, method: Option<String>) -> Result<f64, Error> {
    let scale = 10f64.powi(precision.unwrap_or(0));
    let x = value * scale;
    let rounded = match method.as_deref().unwrap_or("common") {
        "common" => {
            let r = x.round();
            if (x - x.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
                r - x.signum()
            } else {
                r
            }
        }
        "ceil" => x.ceil(),
        "floor" => x.floor(),
        other => return Err(invalid(format!("round: unknown method '{other}'"))),
    };
    Ok(rounded / scale)
}

fn by_attribute(items: Value, kwargs: &Kwargs) -> Result<Vec<(Value, Value)>, Error> {
    let attribute: Option<String> = kwargs.get("attribute")?;
    items
        .try_iter()?
        .map(|item| {
            let key = match &attribute {
                Some(name) => name
                    .split('.')
                    .try_fold(item.clone(), |v, part| v.get_attr(part))?,
                None => item.clone(),
            };
            Ok((key, item))
        })
        .collect()
}

/// `min(attribute=)` and `max(attribute=)`: the item with the smallest or largest (attribute)
/// value.
fn extreme(items: Value, kwargs: Kwargs, largest: bool) -> Result<Value, Error> {
    let pairs = by_attribute(items, &kwargs)?;
    let _: Option<bool> = kwargs.get("case_sensitive")?;
    kwargs.assert_all_used()?;
    let by_key = |a: &(Value, Value), b: &(Value, Value)| a.0.cmp(&b.0);
    let found = if largest {
        pairs.into_iter().max_by(by_key)
    } else {
        pairs.into_iter().min_by(by_key)
    };
    Ok(found.map(|p| p.1).unwrap_or_default())
}

/// `sum(attribute=, start=0)`.
fn sum(items: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let start: Option<Value> = kwargs.get("start")?;
    let pairs = by_attribute(items, &kwargs)?;
    kwargs.assert_all_used()?;
    let values: Vec<Value> = start
        .into_iter()
        .chain(pairs.into_iter().map(|p| p.0))
        .collect();
    if values.iter().all(|v| v.kind() == ValueKind::Seq) {
        // Lists add up to one list, as Python's sum(lists, []) does.
        let joined: Vec<Value> = values
            .iter()
            .flat_map(|v| v.try_iter().into_iter().flatten())
            .collect();
        return Ok(Value::from(joined));
    }
    if let Some(ints) = values
        .iter()
        .map(Value::as_i64)
        .collect::<Option<Vec<i64>>>()
    {
        return Ok(Value::from(ints.iter().sum::<i64>()));
    }
    let floats = values
        .iter()
        .map(|v| f64::try_from(v.clone()).map_err(|_| invalid(format!("sum: {v} is not a number"))))
        .collect::<Result<Vec<f64>, Error>>()?;
    Ok(Value::from(floats.iter().sum::<f64>()))
}

/// `flatten(levels, skip_nulls=True)`: nested lists flattened (`levels` deep when given), with
/// None, 'None' and 'null' left out unless `skip_nulls` is false.
fn flatten(value: Value, levels: Option<usize>, kwargs: Kwargs) -> Result<Value, Error> {
    let levels = match kwargs.get::<Option<usize>>("levels")? {
        Some(l) => Some(l),
        None => levels,
    };
    // Ansible's skip_nulls (default true) leaves out None and the texts 'None' and 'null'.
    let skip_nulls = kwargs.get::<Option<bool>>("skip_nulls")?.unwrap_or(true);
    kwargs.assert_all_used()?;
    fn walk(
        value: &Value,
        depth: Option<usize>,
        skip_nulls: bool,
        out: &mut Vec<Value>,
    ) -> Result<(), Error> {
        for item in value.try_iter()? {
            let null = item.is_none() || matches!(item.as_str(), Some("None" | "null"));
            if skip_nulls && null {
                continue;
            }
            if item.kind() == ValueKind::Seq && depth.is_none_or(|d| d > 0) {
                walk(&item, depth.map(|d| d - 1), skip_nulls, out)?;
            } else {
                out.push(item);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(&value, levels, skip_nulls, &mut out)?;
    Ok(Value::from(out))
}

/// `splitext`: Python's os.path.splitext, as a pair.
fn splitext(path: String) -> Value {
    let name_start = path.rfind('/').map_or(0, |i| i + 1);
    let name = &path[name_start..];
    let dot = name
        .trim_start_matches('.')
        .rfind('.')
        .map(|i| name_start + (name.len() - name.trim_start_matches('.').len()) + i);
    let (root, ext) = match dot {
        Some(i) => (&path[..i], &path[i..]),
        None => (path.as_str(), ""),
    };
    super::pyrepr::tuple(vec![Value::from(root), Value::from(ext)])
}

/// `zip_longest(other..., fillvalue=None)`.
fn zip_longest(first: Value, others: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let fill: Option<Value> = kwargs.get("fillvalue")?;
    kwargs.assert_all_used()?;
    let lists: Vec<Vec<Value>> = std::iter::once(first)
        .chain(others.iter().cloned())
        .map(|l| l.try_iter().map(Iterator::collect))
        .collect::<Result<_, _>>()?;
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    let fill = fill.unwrap_or(Value::from(()));
    Ok(Value::from(
        (0..longest)
            .map(|i| {
                super::pyrepr::tuple(
                    lists
                        .iter()
                        .map(|l| l.get(i).cloned().unwrap_or_else(|| fill.clone()))
                        .collect(),
                )
            })
            .collect::<Vec<_>>(),
    ))
}

/// `type_debug`: the Python type's name.
fn type_debug(value: Value) -> &'static str {
    match value.kind() {
        ValueKind::None | ValueKind::Undefined => "NoneType",
        ValueKind::Bool => "bool",
        ValueKind::Number if value.as_i64().is_some() => "int",
        ValueKind::Number => "float",
        ValueKind::String => "str",
        ValueKind::Seq => "list",
        ValueKind::Map => "dict",
        _ => "object",
    }
}

fn md5(value: String) -> String {
    use md5::Digest;
    format!("{:x}", md5::Md5::digest(value.as_bytes()))
}

/// `password_hash(hashtype='sha512', salt=None, rounds=None)`: SHA-crypt as Ansible (passlib)
/// writes it, `$6$salt$hash` (`$5$` for sha256; `rounds=N$` when not the default 5000).
/// Without a salt Ansible picks a random one (`salt_size` long); imgbuild derives one from the
/// password, so the image stays reproducible (give a salt to match a hash made elsewhere).
fn password_hash(
    password: String,
    hashtype: Option<String>,
    salt: Option<String>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let hashtype = kwargs.get::<Option<String>>("hashtype")?.or(hashtype);
    let salt = kwargs.get::<Option<String>>("salt")?.or(salt);
    let salt_size: Option<usize> = kwargs.get("salt_size")?;
    let rounds: Option<usize> = kwargs.get("rounds")?;
    let _: Option<String> = kwargs.get("ident")?;
    kwargs.assert_all_used()?;
    let salt = salt.unwrap_or_else(|| {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(password.as_bytes());
        let alphabet = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        digest
            .iter()
            .cycle()
            .take(salt_size.unwrap_or(16))
            .map(|b| alphabet[usize::from(*b) % alphabet.len()] as char)
            .collect()
    });
    let rounds_used = rounds.unwrap_or(5000);
    let failed = |e| invalid(format!("password_hash: {e:?}"));
    let (id, hash) = match hashtype.as_deref().unwrap_or("sha512") {
        "sha512" | "sha512_crypt" => {
            let params = sha_crypt::Sha512Params::new(rounds_used).map_err(failed)?;
            (
                "6",
                sha_crypt::sha512_crypt_b64(password.as_bytes(), salt.as_bytes(), &params)
                    .map_err(failed)?,
            )
        }
        "sha256" | "sha256_crypt" => {
            let params = sha_crypt::Sha256Params::new(rounds_used).map_err(failed)?;
            (
                "5",
                sha_crypt::sha256_crypt_b64(password.as_bytes(), salt.as_bytes(), &params)
                    .map_err(failed)?,
            )
        }
        other => {
            return Err(invalid(format!(
                "crypt.crypt does not support '{other}' algorithm (Ansible's words; imgbuild has sha512 and sha256)"
            )))
        }
    };
    let rounds_part = match rounds {
        Some(n) if n != 5000 => format!("rounds={n}$"),
        _ => String::new(),
    };
    Ok(format!("${id}${rounds_part}{salt}${hash}"))
}

/// `community.general.counter`: how often each item occurs, in first-seen order.
fn counter(items: Value) -> Result<Value, Error> {
    let mut counts: Vec<(Value, i64)> = Vec::new();
    for item in items.try_iter()? {
        match counts.iter_mut().find(|(v, _)| *v == item) {
            Some((_, n)) => *n += 1,
            None => counts.push((item, 1)),
        }
    }
    Ok(Value::from_iter(counts))
}

/// `comment(style='plain', **kw)`: the text as a comment block, as Ansible's comment filter
/// builds it: `beginning`, `prefix` lines, each text line after `decoration`, `postfix` lines,
/// `end`, with the style's defaults (`plain`: `#` lines around `# text`; `erlang` `%`, `c`
/// `//`, `cblock` `/* */`, `xml` `<!-- -->`) under every keyword given.
fn comment(text: String, style: Option<String>, kwargs: Kwargs) -> Result<String, Error> {
    let style = kwargs
        .get::<Option<String>>("style")?
        .or(style)
        .unwrap_or_else(|| "plain".into());
    let (beginning, decoration, end) = match style.as_str() {
        "plain" => ("", "# ", ""),
        "erlang" => ("", "% ", ""),
        "c" => ("", "// ", ""),
        "cblock" => ("/*", " * ", " */"),
        "xml" => ("<!--", " - ", "-->"),
        other => return Err(invalid(format!("comment: unknown style '{other}'"))),
    };
    let given = |key: &str| -> Result<Option<String>, Error> {
        Ok(kwargs.get::<Option<Value>>(key)?.map(|v| match v.as_str() {
            Some(s) => s.to_owned(),
            None => v.to_string(),
        }))
    };
    // prefix and postfix default to the decoration (given, or the style's), right-trimmed.
    let prepostfix = given("decoration")?.unwrap_or_else(|| decoration.to_owned());
    let newline = given("newline")?.unwrap_or_else(|| "\n".into());
    let beginning = given("beginning")?.unwrap_or_else(|| beginning.to_owned());
    let prefix = given("prefix")?.unwrap_or_else(|| prepostfix.trim_end().to_owned());
    let postfix = given("postfix")?.unwrap_or_else(|| prepostfix.trim_end().to_owned());
    let decoration = prepostfix.clone();
    let end = given("end")?.unwrap_or_else(|| end.to_owned());
    let count = |key: &str| -> Result<usize, Error> {
        given(key)?.map_or(Ok(1), |n| {
            n.trim()
                .parse::<usize>()
                .map_err(|_| invalid(format!("comment: {key} '{n}' is not a count")))
        })
    };
    let (prefix_count, postfix_count) = (count("prefix_count")?, count("postfix_count")?);
    kwargs.assert_all_used()?;
    let mut out = String::new();
    if !beginning.is_empty() {
        out.push_str(&format!("{beginning}{newline}"));
    }
    if !prefix.is_empty() {
        let line = if prefix == newline {
            newline.clone()
        } else {
            format!("{prefix}{newline}")
        };
        out.push_str(&line.repeat(prefix_count));
    }
    let body = format!(
        "{decoration}{}",
        text.replace(&newline, &format!("{newline}{decoration}"))
    );
    // A line that is only the decoration loses its trailing spaces.
    out.push_str(&body.replace(
        &format!("{decoration}{newline}"),
        &format!("{}{newline}", decoration.trim_end()),
    ));
    for _ in 0..postfix_count {
        out.push_str(&format!("{newline}{postfix}"));
    }
    if !end.is_empty() {
        out.push_str(&format!("{newline}{end}"));
    }
    Ok(out)
}

/// `seq is contains(x)`.
/// Ansible's `contains` test: Python's `item in seq` (a substring of text, a key of a mapping).
fn contains(seq: Value, item: Value) -> Result<bool, Error> {
    if let (Some(text), Some(part)) = (seq.as_str(), item.as_str()) {
        return Ok(text.contains(part));
    }
    Ok(seq.try_iter()?.any(|v| v == item))
}

/// `match`/`search`/`regex` tests with Python's `ignorecase`/`multiline` keywords.
fn regex_test(value: &str, pattern: &str, anchored: bool, kwargs: &Kwargs) -> Result<bool, Error> {
    let ignorecase = kwargs.get::<Option<bool>>("ignorecase")?.unwrap_or(false);
    let multiline = kwargs.get::<Option<bool>>("multiline")?.unwrap_or(false);
    kwargs.assert_all_used()?;
    let pattern = if anchored {
        format!("^(?:{pattern})")
    } else {
        pattern.to_owned()
    };
    let re = regex::RegexBuilder::new(&pattern)
        .case_insensitive(ignorecase)
        .multi_line(multiline)
        .build()
        .map_err(|e| invalid(format!("bad regular expression: {e}")))?;
    Ok(re.is_match(value))
}

/// Registers these filters and tests (over minijinja's own of the same names).
pub fn register(env: &mut minijinja::Environment<'static>) {
    env.add_filter("replace", replace);
    env.add_filter("round", round);
    env.add_filter("min", |items: Value, kwargs: Kwargs| {
        extreme(items, kwargs, false)
    });
    env.add_filter("max", |items: Value, kwargs: Kwargs| {
        extreme(items, kwargs, true)
    });
    env.add_filter("sum", sum);
    env.add_filter("flatten", flatten);
    env.add_filter("splitext", splitext);
    env.add_filter("zip", super::pyrepr::zip);
    env.add_filter("zip_longest", zip_longest);
    env.add_filter("type_debug", type_debug);
    env.add_filter("md5", md5);
    env.add_filter("password_hash", password_hash);
    env.add_filter("counter", counter);
    env.add_filter("comment", comment);
    env.add_filter("community.general.counter", counter);
    env.add_test("contains", contains);
    // Jinja2's: anything with a length and items by index, text and mappings included.
    env.add_test("sequence", |v: Value| {
        matches!(
            v.kind(),
            ValueKind::String | ValueKind::Seq | ValueKind::Map
        )
    });
    env.add_test("match", |v: String, p: String, k: Kwargs| {
        regex_test(&v, &p, true, &k)
    });
    env.add_test("search", |v: String, p: String, k: Kwargs| {
        regex_test(&v, &p, false, &k)
    });
    env.add_test("regex", |v: String, p: String, k: Kwargs| {
        regex_test(&v, &p, false, &k)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flatten_skips_nulls_as_ansible_does_unless_asked_not_to() {
        let mut env = minijinja::Environment::new();
        register(&mut env);
        let render = |t: &str| env.render_str(t, ()).expect("render");
        let list = "[1, none, 'None', [3, ['null', [5]]], 7]";
        assert_eq!(
            render(&format!("{{{{ {list} | flatten }}}}")),
            "[1, 3, 5, 7]"
        );
        assert_eq!(
            render(&format!(
                "{{{{ {list} | flatten(levels=1, skip_nulls=False) }}}}"
            )),
            "[1, None, \"None\", 3, [\"null\", [5]], 7]"
        );
    }

    #[test]
    fn python_results() {
        assert_eq!(round(2.5, None, None).expect("round"), 2.0);
        assert_eq!(round(3.5, None, None).expect("round"), 4.0);
        assert_eq!(
            round(2.567, Some(2), Some("floor".into())).expect("round"),
            2.56
        );
        assert_eq!(
            replace("a-b-c".into(), "-".into(), "".into(), Some(1)),
            "ab-c"
        );
        assert_eq!(
            splitext("/etc/app.conf".into()).to_string(),
            r#"["/etc/app", ".conf"]"#
        );
        assert_eq!(
            splitext("/etc/.bashrc".into()).to_string(),
            r#"["/etc/.bashrc", ""]"#
        );
        assert_eq!(md5("abc".into()), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(type_debug(Value::from(1.5)), "float");
        // Checked against ansible's comment filter.
        let none = || Kwargs::from_iter(Vec::<(&str, Value)>::new());
        assert_eq!(
            comment("Ansible managed".into(), None, none()).expect("comment"),
            "#\n# Ansible managed\n#"
        );
        // Checked against Python: crypt.crypt('secret', '$6$saltsalt$').
        let hashed = password_hash(
            "secret".into(),
            None,
            Some("saltsalt".into()),
            Kwargs::from_iter(Vec::<(&str, Value)>::new()),
        )
        .expect("hash");
        assert_eq!(
            hashed,
            "$6$saltsalt$TVLlQcbpFVof5W3Yz4DTP6gRstiNuHwwTt6GLc1E5n0U0aDehy0S5knV8wiOQSpT0Y77vwPZN.Pq.H91p5hVO1"
        );
    }
}
