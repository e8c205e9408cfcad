//! Lookups with options in `key=value` terms: `csvfile` (a file of the role), `config` (the
//! ansible-core settings an image build answers), `password` for `/dev/null` only, and the
//! lookups that would run or fetch something on the machine running the build, refused.

use indexmap::IndexMap;
use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, State, Value};

use super::lookup_state::{find_file, lookup_failed, read_role_file};

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// Ansible's `parse_kv`: `key=value` words (values unquoted, escapes decoded) and the other
/// words, as written and joined with spaces, under `_raw_params`.
pub fn parse_kv(term: &str) -> IndexMap<String, String> {
    let mut out = IndexMap::new();
    let mut raw: Vec<&str> = Vec::new();
    let mut rest = term;
    while let Some((word, after)) = crate::free_form::first_word(rest) {
        match crate::free_form::parse_key_values(word) {
            Ok(map) if !map.is_empty() => {
                for (k, v) in map {
                    out.insert(k, v.as_str().unwrap_or_default().to_owned());
                }
            }
            _ => raw.push(word),
        }
        rest = after;
    }
    if !raw.is_empty() {
        out.insert("_raw_params".into(), raw.join(" "));
    }
    out
}

/// `lookup('password', ...)` beyond `/dev/null` without Ansible's plugin: refused, with why.
pub fn refuse(plugin: &str) -> Error {
    invalid(format!(
        "lookup('{plugin}') with a file reads or writes the password file on the machine running the build, which Ansible's own plugin does, and no ansible-core is on this machine: install it (Debian's ansible, or pip install ansible-core), or use /dev/null"
    ))
}

/// Whether every `password` term is `/dev/null` (the part imgbuild implements itself).
pub fn dev_null_only(terms: &[String]) -> bool {
    terms
        .iter()
        .all(|term| term.split(' ').next() == Some("/dev/null"))
}

/// Python's `csv.reader` (excel dialect) over `text`: rows of fields.
fn csv_rows(text: &str, delimiter: char) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row: Vec<String> = Vec::new();
    let mut field = String::new();
    let (mut quoted, mut at_start, mut was_quoted) = (false, true, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                '"' => quoted = false,
                other => field.push(other),
            }
            continue;
        }
        match c {
            '"' if at_start => {
                quoted = true;
                was_quoted = true;
                at_start = false;
            }
            c if c == delimiter => {
                row.push(std::mem::take(&mut field));
                at_start = true;
            }
            '\r' | '\n' => {
                if c == '\r' && chars.peek() == Some(&'\n') {
                    chars.next();
                }
                if !row.is_empty() || !field.is_empty() || was_quoted {
                    row.push(std::mem::take(&mut field));
                }
                rows.push(std::mem::take(&mut row));
                at_start = true;
                was_quoted = false;
            }
            other => {
                field.push(other);
                at_start = false;
            }
        }
    }
    if !row.is_empty() || !field.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

const CSV_OPTIONS: [&str; 5] = ["col", "default", "delimiter", "file", "encoding"];

/// The csvfile options the keywords give, over the lookup's defaults (`default` has none).
fn csv_options(kwargs: &Kwargs) -> Result<IndexMap<String, Option<String>>, Error> {
    let mut base: IndexMap<String, Option<String>> = IndexMap::new();
    for (name, default) in CSV_OPTIONS
        .iter()
        .zip(["1", "", "TAB", "ansible.csv", "utf-8"])
    {
        let given: Option<Value> = kwargs.get(name)?;
        let value = match given {
            Some(v) if v.is_none() => None,
            Some(v) => Some(
                v.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string()),
            ),
            None if *name == "default" => None,
            None => Some(default.to_owned()),
        };
        base.insert((*name).to_owned(), value);
    }
    Ok(base)
}

/// `lookup('csvfile', 'key file=x.csv delimiter=, col=1')` (or the options as keywords): the
/// `col` column of the first row whose first column is the key.
pub fn csvfile(terms: &[String], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let base = csv_options(kwargs)?;
    let mut out = Vec::new();
    for term in terms {
        let mut kv = parse_kv(term);
        let key = kv
            .shift_remove("_raw_params")
            .ok_or_else(|| lookup_failed("Search key is required but was not found"))?;
        let mut options = base.clone();
        for (name, value) in kv {
            if !options.contains_key(&name) {
                return Err(lookup_failed(format!("{name} is not a valid option")));
            }
            options.insert(name, Some(value));
        }
        let get = |name: &str| options.get(name).cloned().flatten().unwrap_or_default();
        let delimiter = match get("delimiter").as_str() {
            "TAB" | "\\t" => "\t".to_owned(),
            other => other.to_owned(),
        };
        let mut delimiters = delimiter.chars();
        let (Some(delimiter), None) = (delimiters.next(), delimiters.next()) else {
            return Err(lookup_failed(
                "csvfile: \"delimiter\" must be a 1-character string",
            ));
        };
        let encoding = get("encoding").to_ascii_lowercase().replace('_', "-");
        if !matches!(encoding.as_str(), "utf-8" | "utf8") {
            return Err(invalid(format!(
                "lookup('csvfile'): encoding '{encoding}': imgbuild reads utf-8 files only"
            )));
        }
        let file = get("file");
        let Some(path) = find_file(&file)? else {
            return Err(lookup_failed(format!(
                "csvfile: [Errno 2] No such file or directory: '{file}'"
            )));
        };
        let text = read_role_file(&path)?;
        let row = csv_rows(&text, delimiter)
            .into_iter()
            .find(|r| r.first() == Some(&key));
        match row {
            Some(row) => {
                let col: usize = get("col").trim().parse().map_err(|_| {
                    lookup_failed(format!(
                        "csvfile: invalid literal for int() with base 10: '{}'",
                        get("col")
                    ))
                })?;
                let value = row
                    .get(col)
                    .ok_or_else(|| lookup_failed("csvfile: list index out of range"))?;
                out.push(Value::from(value.as_str()));
            }
            None => {
                if let Some(Some(default)) = options.get("default") {
                    out.push(Value::from(default.as_str()));
                }
            }
        }
    }
    Ok(out)
}

/// ansible-core 2.14's defaults for the settings a build has, by name.
fn global_setting(name: &str) -> Option<serde_json::Value> {
    use serde_json::json;
    Some(match name {
        "ANSIBLE_COW_ACCEPTLIST" => json!([
            "bud-frogs",
            "bunny",
            "cheese",
            "daemon",
            "default",
            "dragon",
            "elephant-in-snake",
            "elephant",
            "eyes",
            "hellokitty",
            "kitty",
            "luke-koala",
            "meow",
            "milk",
            "moofasa",
            "moose",
            "ren",
            "sheep",
            "small",
            "stegosaurus",
            "stimpy",
            "supermilker",
            "three-eyes",
            "turkey",
            "turtle",
            "tux",
            "udder",
            "vader-koala",
            "vader",
            "www"
        ]),
        "ANSIBLE_NOCOWS"
        | "ANSIBLE_FORCE_COLOR"
        | "DEFAULT_BECOME"
        | "DEFAULT_JINJA2_NATIVE"
        | "DEFAULT_PRIVATE_ROLE_VARS"
        | "DEFAULT_ALLOW_UNSAFE_LOOKUPS"
        | "DEFAULT_KEEP_REMOTE_FILES"
        | "RETRY_FILES_ENABLED"
        | "DEFAULT_NO_LOG"
        | "DEFAULT_DEBUG"
        | "DEFAULT_SU" => json!(false),
        "INJECT_FACTS_AS_VARS" | "DEFAULT_UNDEFINED_VAR_BEHAVIOR" => json!(true),
        "DEFAULT_BECOME_USER" => json!("root"),
        "DEFAULT_BECOME_METHOD" => json!("sudo"),
        "DEFAULT_HASH_BEHAVIOUR" => json!("replace"),
        "DEFAULT_MANAGED_STR" => json!("Ansible managed"),
        "DEFAULT_EXECUTABLE" => json!("/bin/sh"),
        "DEFAULT_MODULE_NAME" => json!("command"),
        "DEFAULT_GATHERING" => json!("implicit"),
        "STRING_CONVERSION_ACTION" => json!("warn"),
        "INTERPRETER_PYTHON" => json!("auto"),
        "COLOR_OK" => json!("green"),
        "COLOR_CHANGED" => json!("yellow"),
        "COLOR_SKIP" => json!("cyan"),
        "COLOR_ERROR" => json!("red"),
        "DEFAULT_JINJA2_EXTENSIONS" => json!([]),
        "DEFAULT_BECOME_EXE"
        | "DEFAULT_REMOTE_USER"
        | "DEFAULT_REMOTE_PORT"
        | "DEFAULT_NULL_REPRESENTATION" => json!(null),
        "DEFAULT_VERBOSITY" => json!(0),
        "DEFAULT_SELINUX_SPECIAL_FS" => json!(["fuse", "nfs", "vboxsf", "ramfs", "9p", "vfat"]),
        _ => return None,
    })
}

/// A connection or shell plugin's setting, from the variables Ansible reads it from.
fn plugin_setting(state: &State, ptype: &str, pname: &str, name: &str) -> Result<Value, Error> {
    let (vars, default): (&[&str], Value) = match (ptype, pname, name) {
        ("connection", "ssh", "remote_user") => {
            (&["ansible_user", "ansible_ssh_user"], Value::from(()))
        }
        ("connection", "ssh", "port") => (&["ansible_port", "ansible_ssh_port"], Value::from(())),
        ("shell", "sh", "remote_tmp") => (
            &["ansible_remote_tmp", "ansible_sh_remote_tmp"],
            Value::from("~/.ansible/tmp"),
        ),
        _ => {
            return Err(invalid(format!(
                "lookup('config'): imgbuild answers the ssh connection's remote_user and port and the sh shell's remote_tmp, not {ptype} {pname}'s {name}"
            )))
        }
    };
    // The last variable listed wins, as in Ansible's configuration manager.
    Ok(vars
        .iter()
        .rev()
        .find_map(|v| state.lookup(v).filter(|v| !v.is_undefined()))
        .unwrap_or(default))
}

/// `lookup('config', name, ..., on_missing=, plugin_type=, plugin_name=)`.
pub fn config(state: &State, terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let missing: Option<Value> = kwargs.get("on_missing")?;
    let ptype: Option<String> = kwargs.get("plugin_type")?;
    let pname: Option<String> = kwargs.get("plugin_name")?;
    if ptype.is_some() != pname.is_some() {
        return Err(invalid(
            "Both plugin_type and plugin_name are required, cannot use one without the other",
        ));
    }
    let missing = match missing.as_ref().map(|m| m.as_str()) {
        None => "error",
        Some(Some(m @ ("error" | "warn" | "skip"))) => m,
        Some(_) => {
            let shown = missing.map(|m| m.to_string()).unwrap_or_default();
            return Err(invalid(format!(
                "Invalid value \"{shown}\" for configuration option \"plugin_type: lookup plugin: config setting: on_missing \", valid values are: error, skip, warn"
            )));
        }
    };
    let mut out = Vec::new();
    for term in terms {
        let Some(name) = term.as_str().filter(|_| term.kind() == ValueKind::String) else {
            return Err(invalid(format!(
                "Invalid setting identifier, \"{term}\" is not a string, its a {}",
                super::lookup_lists::py_type(term)
            )));
        };
        if let (Some(ptype), Some(pname)) = (&ptype, &pname) {
            out.push(plugin_setting(state, ptype, pname, name)?);
            continue;
        }
        if matches!(name, "ConfigManager" | "set_constant" | "Sentinel") {
            return Err(lookup_failed(format!(
                "Invalid setting \"{name}\" attempted"
            )));
        }
        match global_setting(name) {
            Some(value) => out.push(Value::from_serialize(value)),
            None if missing == "error" => {
                return Err(lookup_failed(format!(
                    "Unable to find setting {name} (imgbuild answers the settings of ansible-core 2.14's defaults that a build has, such as DEFAULT_BECOME_USER)"
                )))
            }
            None => {}
        }
    }
    Ok(out)
}

/// `lookup('password', '/dev/null length=N chars=...')`: a new random password each time, as
/// Ansible gives for `/dev/null`. Any other path is a file on the machine running the build.
/// Options given as keywords (`seed="foo"`) are the defaults a term's own override.
pub fn password(terms: &[String], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let mut defaults = IndexMap::new();
    for key in ["length", "chars", "seed"] {
        if let Some(value) = kwargs.get::<Option<Value>>(key)? {
            let text = match value.as_str() {
                Some(text) => text.to_owned(),
                None if value.kind() == ValueKind::Seq => value
                    .try_iter()
                    .map(|items| items.map(|i| i.to_string()).collect::<Vec<_>>().join(","))
                    .unwrap_or_default(),
                None => value.to_string(),
            };
            defaults.insert(key.to_owned(), text);
        }
    }
    let mut out = Vec::new();
    for term in terms {
        let (path, own) = match term.split_once(' ') {
            Some((path, rest)) => (path, parse_kv(rest)),
            None => (term.as_str(), IndexMap::new()),
        };
        let mut params = defaults.clone();
        params.extend(own);
        if path != "/dev/null" {
            return Err(refuse("password"));
        }
        let mut length = 20usize;
        let mut chars: String =
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:-_".into();
        let mut seed = None;
        for (key, value) in &params {
            match key.as_str() {
                "length" => {
                    length = value.parse().map_err(|_| {
                        lookup_failed(format!(
                            "invalid literal for int() with base 10: '{value}'"
                        ))
                    })?
                }
                "chars" => chars = candidate_chars(value),
                "seed" => seed = Some(value.clone()),
                other => {
                    return Err(invalid(format!(
                        "lookup('password'): imgbuild takes length, chars and seed for /dev/null, not {other}"
                    )))
                }
            }
        }
        let pool: Vec<char> = chars.chars().collect();
        if pool.is_empty() {
            return Err(lookup_failed("Cannot choose from an empty sequence"));
        }
        let mut seeded =
            seed.map(|s| super::pyrandom::PyRandom::new(super::pyrandom::Seed::Text(&s)));
        let text: String = (0..length)
            .map(|_| {
                let n = pool.len() as u64;
                let i = match seeded.as_mut() {
                    Some(r) => r.below(n),
                    None => super::pyrandom::system_below(n),
                };
                pool[i as usize]
            })
            .collect();
        out.push(Value::from(text));
    }
    Ok(out)
}

/// `chars=ascii_letters,digits,,`: names of Python's `string` constants or literal characters.
fn candidate_chars(spec: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    if spec.contains(",,") {
        parts.push(",".into());
    }
    parts.extend(
        spec.replace(",,", ",")
            .split(',')
            .filter(|c| !c.is_empty())
            .map(str::to_owned),
    );
    let lower = "abcdefghijklmnopqrstuvwxyz";
    let upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    parts
        .iter()
        .map(|p| match p.as_str() {
            "ascii_letters" => format!("{lower}{upper}"),
            "ascii_lowercase" => lower.into(),
            "ascii_uppercase" => upper.into(),
            "digits" => "0123456789".into(),
            "hexdigits" => "0123456789abcdefABCDEF".into(),
            "octdigits" => "01234567".into(),
            "punctuation" => "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~".into(),
            other => other.to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_kv_keeps_other_words_as_raw_params() {
        let kv = parse_kv("\"The Rock\" Johnson file=people.csv delimiter=, col=1");
        assert_eq!(
            kv.get("_raw_params").map(String::as_str),
            Some("\"The Rock\" Johnson")
        );
        assert_eq!(kv.get("delimiter").map(String::as_str), Some(","));
        assert_eq!(kv.get("col").map(String::as_str), Some("1"));
    }

    #[test]
    fn csv_rows_read_as_pythons_reader() {
        let rows = csv_rows("a,\"b, c\",d\r\n\"x\"y,\"q\"\"q\"\n", ',');
        assert_eq!(rows, [vec!["a", "b, c", "d"], vec!["xy", "q\"q"]]);
    }

    #[test]
    fn passwords_for_dev_null_only() {
        let none = Kwargs::from_iter(std::iter::empty::<(&str, Value)>());
        let got = password(&["/dev/null length=12 chars=digits".into()], &none).expect("password");
        let text = got[0].as_str().unwrap_or_default().to_owned();
        assert_eq!(text.len(), 12);
        assert!(text.chars().all(|c| c.is_ascii_digit()));
        let err = password(&["/tmp/pw".into()], &none).expect_err("a file");
        let seeded = Kwargs::from_iter([("seed", Value::from("foo"))]);
        let first = password(&["/dev/null".into()], &seeded).expect("seeded");
        let inline = password(&["/dev/null seed=foo".into()], &none).expect("inline");
        assert_eq!(first, inline);
        assert!(err.to_string().contains("the password file"), "{err}");
        assert!(!dev_null_only(&["/dev/null length=3".into(), "pw".into()]));
        assert_eq!(candidate_chars("digits,,"), ",0123456789");
    }
}
