//! `lookup()` and `query()`/`q()`: `file`, `template`, `first_found` and `fileglob` over the files
//! of the role being planned. The planner says where to look before it renders a task, and
//! records every file a lookup read as an input of the image.

use minijinja::value::{Kwargs, Rest, ValueKind};
use minijinja::{Error, State, Value};

use super::lookup_plugins;
use super::lookup_state::{
    find, first_dir, invalid, is_lookup_failure, lookup_failed, not_found, root, safe,
};
pub use super::lookup_state::{set_search, take_reads};
pub use super::templar::Rendering;

fn terms(args: &[Value]) -> Vec<String> {
    args.iter()
        .flat_map(|a| match a.try_iter() {
            Ok(items) if a.as_str().is_none() => items.map(|i| i.to_string()).collect::<Vec<_>>(),
            _ => vec![a
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| a.to_string())],
        })
        .collect()
}

/// Every term is text (lists of text count as their items), as `vars` and `varnames` ask.
fn text_terms(plugin: &str, args: &[Value]) -> Result<Vec<String>, Error> {
    for arg in args {
        if !matches!(arg.kind(), ValueKind::String | ValueKind::Seq) {
            return Err(lookup_failed(format!(
                "Invalid setting identifier, \"{arg}\" is not a string, its a {} (lookup('{plugin}'))",
                super::lookup_lists::py_type(arg)
            )));
        }
    }
    Ok(terms(args))
}

/// The lookups imgbuild implements (also under `ansible.builtin.`).
const NATIVE: &[&str] = &[
    "vars",
    "env",
    "sequence",
    "dict",
    "indexed_items",
    "items",
    "list",
    "together",
    "nested",
    "subelements",
    "random_choice",
    "varnames",
    "config",
    "csvfile",
    "password",
    "url",
    "pipe",
    "lines",
    "file",
    "unvault",
    "first_found",
    "fileglob",
    "template",
];

/// Lookups imgbuild implements in part, whose other uses Ansible's own plugin runs:
/// `password` for a file (imgbuild's gives `/dev/null` passwords; Ansible's reads or writes
/// the password file on the machine running the build, as on its controller).
const PARTLY_NATIVE: &[&str] = &["password"];

/// Lookups that imgbuild does not implement but can call (the project's Python plugins).
pub trait OtherLookups {
    /// Whether a lookup of this name is here.
    fn has_lookup(&self, name: &str) -> bool;
    /// The lookup's items for `terms` and `kwargs`, with the template's variables.
    fn run_lookup(
        &self,
        state: &State,
        name: &str,
        terms: &[Value],
        kwargs: &Kwargs,
    ) -> Result<Vec<Value>, Error>;
}

/// Whether imgbuild implements the lookup `name` itself.
pub fn is_native(name: &str) -> bool {
    NATIVE.contains(&short_name(name))
}

/// Whether imgbuild implements the lookup `name` for every use (not only some, leaving the
/// rest to Ansible's plugin).
pub fn is_wholly_native(name: &str) -> bool {
    is_native(name) && !PARTLY_NATIVE.contains(&short_name(name))
}

fn short_name(name: &str) -> &str {
    name.strip_prefix("ansible.builtin.").unwrap_or(name)
}

/// The items a lookup gives: imgbuild's own, else the Python plugin's.
fn items(
    state: &State,
    plugin: &str,
    args: &[Value],
    kwargs: &Kwargs,
    python: Option<&dyn OtherLookups>,
) -> Result<Vec<Value>, Error> {
    if let Some(python) = python.filter(|p| !is_native(plugin) && p.has_lookup(plugin)) {
        return python.run_lookup(state, plugin, args, kwargs);
    }
    use super::{lookup_files, lookup_lists};
    match plugin.strip_prefix("ansible.builtin.").unwrap_or(plugin) {
        "vars" => lookup_plugins::vars(state, &text_terms("vars", args)?, kwargs),
        "env" => lookup_plugins::env(&terms(args), kwargs),
        "sequence" => super::lookup_sequence::sequence(args),
        "dict" => lookup_lists::dict(args),
        "indexed_items" => lookup_lists::indexed_items(args),
        "items" => Ok(lookup_lists::items(args)),
        "list" => Ok(args.to_vec()),
        "together" => lookup_lists::together(args),
        "nested" => lookup_lists::nested(args),
        "subelements" => lookup_lists::subelements(args),
        "random_choice" => Ok(lookup_lists::random_choice(args)),
        "varnames" => lookup_lists::varnames(state, args),
        "config" => lookup_files::config(state, args, kwargs),
        "csvfile" => lookup_files::csvfile(&terms(args), kwargs),
        "password" => {
            let terms = terms(args);
            match python.filter(|p| !lookup_files::dev_null_only(&terms) && p.has_lookup(plugin)) {
                Some(python) => python.run_lookup(state, plugin, args, kwargs),
                None => lookup_files::password(&terms, kwargs),
            }
        }
        "url" => super::lookup_url::url(state, &terms(args), kwargs),
        "pipe" => super::lookup_command::pipe(&terms(args)),
        "lines" => super::lookup_command::lines(&terms(args)),
        "file" => file(&terms(args), kwargs),
        "unvault" => unvault(&terms(args)),
        "first_found" => first_found(args, kwargs),
        "fileglob" => fileglob(&terms(args)),
        "template" => super::lookup_template::template(&terms(args), kwargs),
        other => Err(invalid(format!(
            "lookup plugin ({other}) not found: imgbuild knows file, unvault, template, first_found, fileglob, csvfile, vars, varnames, env, config, url, sequence, dict, items, list, indexed_items, together, nested, subelements, random_choice and password (for /dev/null); Ansible's loaders (ansible-core, the installed collections, the project's lookup_plugins/) have none of this name either"
        ))),
    }
}

/// `lookup('file', name, ...)`: the role's files' text (trailing space stripped unless
/// `rstrip=False`, leading space with `lstrip=True`), a vaulted file's clear text.
fn file(names: &[String], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let rstrip: bool = kwargs.get::<Option<bool>>("rstrip")?.unwrap_or(true);
    let lstrip: bool = kwargs.get::<Option<bool>>("lstrip")?.unwrap_or(false);
    names
        .iter()
        .map(|name| {
            let text = clear_text("file", name)?;
            let text = if rstrip { text.trim_end() } else { &text };
            Ok(Value::from(if lstrip { text.trim_start() } else { text }))
        })
        .collect()
}

/// `lookup('unvault', name, ...)`: each file's text as it is, opened if it is vaulted.
fn unvault(names: &[String]) -> Result<Vec<Value>, Error> {
    names
        .iter()
        .map(|name| clear_text("unvault", name).map(Value::from))
        .collect()
}

/// The text of the file a lookup names, found as `lookup('file')` finds it, opened with the
/// build's vault passwords when it is vaulted (as Ansible's loader opens it).
fn clear_text(plugin: &str, name: &str) -> Result<String, Error> {
    let path = find(name)?.ok_or_else(|| {
        not_found(format!(
            "lookup('{plugin}'): '{name}' is not a file of the role"
        ))
    })?;
    let bytes = std::fs::read(root().join(&path))
        .map_err(|e| invalid(format!("lookup('{plugin}', '{name}'): {e}")))?;
    if crate::vault::is_vaulted(&bytes) {
        let text = String::from_utf8_lossy(&bytes);
        return crate::vault::process_vault()
            .decrypt_text(&text)
            .map_err(|e| {
                invalid(format!(
                    "lookup('{plugin}', '{name}'): vault-encrypted file: {e}"
                ))
            });
    }
    String::from_utf8(bytes).map_err(|_| {
        invalid(format!(
            "lookup('{plugin}', '{name}'): the file is not UTF-8 text"
        ))
    })
}

/// `lookup('fileglob', 'pattern', ...)`: the role's files matching each pattern.
fn fileglob(patterns: &[String]) -> Result<Vec<Value>, Error> {
    let mut found = Vec::new();
    for pattern in patterns {
        safe(pattern)?;
        let (dir, name) = pattern.rsplit_once('/').unwrap_or(("", pattern));
        let folder = if dir.is_empty() {
            first_dir()
        } else {
            find(dir)?
        };
        let Some(folder) = folder else {
            continue;
        };
        let names = crate::glob::sorted_names(&root().join(&folder));
        for n in names.into_iter().filter(|n| crate::glob::matches(name, n)) {
            found.push(Value::from(folder.join(n).display().to_string()));
        }
    }
    Ok(found)
}

/// first_found's `_split_on`: text split at any of `chars`; lists split item by item.
fn split_on(value: &Value, chars: &[char]) -> Vec<String> {
    match value.as_str() {
        Some(text) => text.split(chars).map(str::to_owned).collect(),
        None if value.is_none() || value.is_undefined() => Vec::new(),
        None => value
            .try_iter()
            .map(|items| items.flat_map(|i| split_on(&i, chars)).collect())
            .unwrap_or_default(),
    }
}

/// first_found's candidates and `skip`, as Ansible's `_process_terms` builds them: a mapping
/// term brings its own `files`/`paths`/`skip`, a text term those of the keywords.
fn first_found_search(
    args: &[Value],
    kw_files: &Value,
    kw_paths: &Value,
    kw_skip: bool,
) -> Result<(Vec<String>, bool), Error> {
    let mut search = Vec::new();
    let mut skip = false;
    for term in args {
        let (files, paths, term_skip) = match term.kind() {
            ValueKind::Map => {
                let get = |k: &str| term.get_attr(k).unwrap_or(Value::UNDEFINED);
                let skip = get("skip");
                let skip = skip.as_str().map_or(skip.is_true(), super::ansible_bool_str);
                (get("files"), get("paths"), skip)
            }
            ValueKind::String => (kw_files.clone(), kw_paths.clone(), kw_skip),
            ValueKind::Seq | ValueKind::Iterable => {
                let inner: Vec<Value> = term.try_iter()?.collect();
                let (partial, inner_skip) =
                    first_found_search(&inner, kw_files, kw_paths, kw_skip)?;
                search.extend(partial);
                skip = inner_skip;
                continue;
            }
            _ => {
                return Err(lookup_failed(format!(
                    "Invalid term supplied, can handle string, mapping or list of strings but got: {} for {term}",
                    super::lookup_lists::py_type(term)
                )))
            }
        };
        skip = term_skip;
        let files = split_on(&files, &[',', ';']);
        let paths = split_on(&paths, &[',', ':', ';']);
        if !paths.is_empty() {
            for path in &paths {
                for file in &files {
                    search.push(if file.starts_with('/') {
                        file.clone()
                    } else {
                        format!("{}/{file}", path.trim_end_matches('/'))
                    });
                }
            }
        } else if !files.is_empty() {
            search = files;
        } else if let Some(text) = term.as_str() {
            search.push(text.to_owned());
        }
    }
    Ok((search, skip))
}

/// `lookup('first_found', ...)`: the first candidate that is a file of the role; none is an
/// error, or `[]` with `skip=True`.
fn first_found(args: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let files: Value = kwargs.get::<Option<Value>>("files")?.unwrap_or_default();
    let paths: Value = kwargs.get::<Option<Value>>("paths")?.unwrap_or_default();
    let skip: bool = kwargs.get::<Option<bool>>("skip")?.unwrap_or(false);
    let mut args = args.to_vec();
    if args.is_empty() && !files.is_none() {
        args.push(Value::from_iter([
            ("files", files.clone()),
            ("paths", paths.clone()),
        ]));
    }
    let (search, skip) = first_found_search(&args, &files, &paths, skip)?;
    for name in &search {
        if let Some(path) = find(name)? {
            return Ok(vec![Value::from(path.display().to_string())]);
        }
    }
    if skip {
        return Ok(Vec::new());
    }
    Err(lookup_failed("No file was found when using first_found."))
}

/// The terms templated once more, as Ansible's `listify_lookup_plugin_terms` does: a text term
/// holding `{{ }}` or `{% %}` is rendered with the task's variables (in lists and mappings too).
fn template_terms(state: &State, args: &[Value]) -> Result<Vec<Value>, Error> {
    args.iter().map(|arg| template_term(state, arg)).collect()
}

fn template_term(state: &State, term: &Value) -> Result<Value, Error> {
    match term.kind() {
        ValueKind::String => match term.as_str() {
            Some(text) if text.contains("{{") || text.contains("{%") => {
                let context = state.lookup("vars").unwrap_or_default();
                state.env().render_str(text, context).map(Value::from)
            }
            _ => Ok(term.clone()),
        },
        ValueKind::Seq => term
            .try_iter()?
            .map(|item| template_term(state, &item))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::from),
        _ => Ok(term.clone()),
    }
}

/// `lookup(name, terms...)`: the items joined with commas (a list with `wantlist=True`).
pub fn lookup(
    state: &State,
    plugin: String,
    args: Rest<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    lookup_with(state, plugin, args, kwargs, None)
}

/// [`lookup`], with the project's Python lookup plugins for names imgbuild has none of.
pub fn lookup_with(
    state: &State,
    plugin: String,
    args: Rest<Value>,
    kwargs: Kwargs,
    python: Option<&dyn OtherLookups>,
) -> Result<Value, Error> {
    let want_list: bool = kwargs.get::<Option<bool>>("wantlist")?.unwrap_or(false);
    let Some(found) = items_or_skip(state, &plugin, &args, &kwargs, python)? else {
        return Ok(if want_list {
            Value::from(Vec::<Value>::new())
        } else {
            Value::from(())
        });
    };
    if want_list || found.is_empty() {
        return Ok(Value::from(found));
    }
    // Ansible joins text items with commas; other items: the one item, or the list.
    if found.iter().all(|v| v.kind() == ValueKind::String) {
        let texts: Vec<&str> = found.iter().filter_map(Value::as_str).collect();
        return Ok(Value::from(texts.join(",")));
    }
    Ok(match found.len() {
        1 => found.into_iter().next().unwrap_or_default(),
        _ => Value::from(found),
    })
}

/// `query(name, terms...)` and `q(...)`: always a list.
pub fn query(
    state: &State,
    plugin: String,
    args: Rest<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    query_with(state, plugin, args, kwargs, None)
}

/// [`query`], with the project's Python lookup plugins for names imgbuild has none of.
pub fn query_with(
    state: &State,
    plugin: String,
    args: Rest<Value>,
    kwargs: Kwargs,
    python: Option<&dyn OtherLookups>,
) -> Result<Value, Error> {
    let found = items_or_skip(state, &plugin, &args, &kwargs, python)?.unwrap_or_default();
    Ok(Value::from(found))
}

/// The lookup's items, or `None` where it failed and `errors='ignore'` or `'warn'` asks Ansible
/// to go on with nothing (`None` from `lookup`, `[]` from `query`) instead of failing the task.
/// Only what fails as Ansible's plugin fails is passed over: a path that would read the build
/// host, or a value only the build knows, is refused whatever `errors` says.
fn items_or_skip(
    state: &State,
    plugin: &str,
    args: &[Value],
    kwargs: &Kwargs,
    python: Option<&dyn OtherLookups>,
) -> Result<Option<Vec<Value>>, Error> {
    let errors: Option<String> = kwargs.get("errors")?;
    let tolerant = match errors.as_deref() {
        None | Some("strict") => false,
        Some("ignore" | "warn") => true,
        Some(other) => {
            return Err(invalid(format!(
                "lookup('{plugin}'): errors='{other}' is not one of strict, warn, ignore"
            )))
        }
    };
    let args = template_terms(state, args)?;
    let found = items(state, plugin, &args, kwargs, python);
    kwargs.assert_all_used()?;
    match found {
        Ok(found) => Ok(Some(found)),
        Err(e) if tolerant && is_lookup_failure(&e) => Ok(None),
        Err(e) => Err(e),
    }
}
