//! `lookup()` and `query()`/`q()`: `file`, `template`, `first_found` and `fileglob` over the files
//! of the role being planned. The planner says where to look before it renders a task, and
//! records every file a lookup read as an input of the image.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use minijinja::value::{Kwargs, Rest};
use minijinja::{Error, ErrorKind, State, Value};

use super::lookup_plugins;

#[derive(Default)]
struct Search {
    root: PathBuf,
    /// Folders relative to the root, in search order.
    dirs: Vec<PathBuf>,
    /// Files and folders lookups read, relative to the root.
    read: Vec<PathBuf>,
}

thread_local! {
    static SEARCH: RefCell<Option<Search>> = const { RefCell::new(None) };
    /// The templar and variables of the renders under way (innermost last), for
    /// `lookup('template')`, which renders a file with the variables of the task using it.
    static CURRENT: RefCell<Vec<(super::Templar, crate::vars::Scope)>> = const { RefCell::new(Vec::new()) };
}

/// Marks a render under way until dropped.
pub struct Rendering(());

impl Rendering {
    /// Records that `templar` renders with `scope` now.
    pub fn enter(templar: &super::Templar, scope: &crate::vars::Scope) -> Self {
        CURRENT.with(|c| c.borrow_mut().push((templar.clone(), scope.clone())));
        Rendering(())
    }
}

impl Drop for Rendering {
    fn drop(&mut self) {
        CURRENT.with(|c| {
            c.borrow_mut().pop();
        });
    }
}

/// `lookup('template', name)`: the role's template rendered with the current variables.
fn render_template(name: &str, extra: Option<&Value>) -> Result<Value, Error> {
    let path = find(name)?.ok_or_else(|| {
        not_found(format!(
            "lookup('template'): '{name}' is not a template of the role"
        ))
    })?;
    let text = std::fs::read_to_string(root().join(&path))
        .map_err(|e| invalid(format!("lookup('template', '{name}'): {e}")))?;
    let current = CURRENT.with(|c| c.borrow().last().cloned());
    let Some((templar, scope)) = current else {
        return Err(invalid("lookup('template') outside a render"));
    };
    // template_vars= are seen over the task's variables.
    let scope = match extra.and_then(|v| serde_json::to_value(v).ok()) {
        Some(serde_json::Value::Object(map)) => {
            scope.with_layer(crate::vars::layer_from(map.iter()))
        }
        _ => scope,
    };
    match templar.render_text(&text, &scope) {
        Ok(Some(rendered)) => Ok(Value::from(rendered)),
        Ok(None) => Err(invalid(format!(
            "lookup('template', '{name}') uses a value only the build knows; use the template module"
        ))),
        Err(e) => Err(invalid(format!("lookup('template', '{name}'): {e}"))),
    }
}

/// Where lookups look for the tasks rendered next (the role's `files/`, `templates/`, `vars/`,
/// the role, the task file's folder), all relative to `root`.
pub fn set_search(root: &Path, dirs: Vec<PathBuf>) {
    SEARCH.with(|s| {
        let read = s
            .borrow_mut()
            .take()
            .map(|old| old.read)
            .unwrap_or_default();
        *s.borrow_mut() = Some(Search {
            root: root.to_owned(),
            dirs,
            read,
        });
    });
}

/// The files lookups read since the last call, relative to the root.
pub fn take_reads() -> Vec<PathBuf> {
    SEARCH.with(|s| {
        s.borrow_mut()
            .as_mut()
            .map(|search| std::mem::take(&mut search.read))
            .unwrap_or_default()
    })
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// A file a lookup looked for and did not find: the one failure `errors='ignore'` passes over.
fn not_found(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::TemplateNotFound, message.into())
}

fn safe(name: &str) -> Result<(), Error> {
    if name.starts_with('/') || name.split('/').any(|c| c == "..") {
        return Err(invalid(format!(
            "lookup: '{name}' must be a file of the role (relative, no '..'): the build host's files are not inputs of the image"
        )));
    }
    Ok(())
}

/// The first search folder holding `name`, as a path relative to the root.
fn find(name: &str) -> Result<Option<PathBuf>, Error> {
    safe(name)?;
    SEARCH.with(|s| {
        let mut s = s.borrow_mut();
        let Some(search) = s.as_mut() else {
            return Err(invalid(
                "lookup() of files works while planning; this value is rendered at build time",
            ));
        };
        let candidates = search
            .dirs
            .iter()
            .map(|d| d.join(name))
            .chain(std::iter::once(PathBuf::from(name)));
        for candidate in candidates {
            if search.root.join(&candidate).exists() {
                search.read.push(candidate.clone());
                return Ok(Some(candidate));
            }
        }
        Ok(None)
    })
}

/// The first search folder that exists (recorded as read).
fn first_dir() -> Option<PathBuf> {
    SEARCH.with(|s| {
        let mut s = s.borrow_mut();
        let search = s.as_mut()?;
        let found = search
            .dirs
            .iter()
            .find(|d| search.root.join(d).is_dir())
            .cloned()?;
        search.read.push(found.clone());
        Some(found)
    })
}

fn root() -> PathBuf {
    SEARCH.with(|s| {
        s.borrow()
            .as_ref()
            .map(|s| s.root.clone())
            .unwrap_or_default()
    })
}

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

/// The items a lookup gives.
fn items(
    state: &State,
    plugin: &str,
    args: &[Value],
    kwargs: &Kwargs,
) -> Result<Vec<Value>, Error> {
    match plugin {
        "vars" | "ansible.builtin.vars" => lookup_plugins::vars(state, &terms(args), kwargs),
        "env" | "ansible.builtin.env" => lookup_plugins::env(&terms(args), kwargs),
        "sequence" | "ansible.builtin.sequence" => lookup_plugins::sequence(&terms(args)),
        "file" | "ansible.builtin.file" => {
            let rstrip: bool = kwargs.get::<Option<bool>>("rstrip")?.unwrap_or(true);
            terms(args)
                .iter()
                .map(|name| {
                    let path = find(name)?.ok_or_else(|| {
                        not_found(format!(
                            "lookup('file'): '{name}' is not a file of the role"
                        ))
                    })?;
                    let text = std::fs::read_to_string(root().join(&path))
                        .map_err(|e| invalid(format!("lookup('file', '{name}'): {e}")))?;
                    Ok(Value::from(if rstrip {
                        text.trim_end().to_owned()
                    } else {
                        text
                    }))
                })
                .collect()
        }
        "first_found" | "ansible.builtin.first_found" => {
            let mut names = first_found_names(args);
            if let Ok(Some(files)) = kwargs.get::<Option<Vec<String>>>("files") {
                names.extend(files);
            }
            let skip: bool = kwargs.get::<Option<bool>>("skip")?.unwrap_or(false);
            for name in &names {
                if let Some(path) = find(name)? {
                    return Ok(vec![Value::from(path.display().to_string())]);
                }
            }
            if skip {
                Ok(Vec::new())
            } else {
                Err(not_found(format!(
                    "lookup('first_found'): none of {} is a file of the role",
                    names.join(", ")
                )))
            }
        }
        "fileglob" | "ansible.builtin.fileglob" => {
            let mut found = Vec::new();
            for pattern in terms(args) {
                safe(&pattern)?;
                let (dir, name) = pattern.rsplit_once('/').unwrap_or(("", &pattern));
                let folder = if dir.is_empty() {
                    first_dir()
                } else {
                    find(dir)?
                };
                let Some(folder) = folder else {
                    continue;
                };
                let mut names: Vec<String> = std::fs::read_dir(root().join(&folder))
                    .map(|d| {
                        d.flatten()
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                names.sort();
                for n in names.into_iter().filter(|n| crate::glob::matches(name, n)) {
                    found.push(Value::from(folder.join(n).display().to_string()));
                }
            }
            Ok(found)
        }
        "template" | "ansible.builtin.template" => {
            let extra: Option<Value> = kwargs.get("template_vars")?;
            terms(args)
                .iter()
                .map(|name| render_template(name, extra.as_ref()))
                .collect()
        }
        other => Err(invalid(format!(
            "unknown lookup '{other}'; imgbuild knows file, template, env, first_found, fileglob, vars and sequence"
        ))),
    }
}

/// first_found's names: strings, lists of them, and `{files: [...], paths: [...]}` mappings
/// (every file in every path, in order).
fn first_found_names(args: &[Value]) -> Vec<String> {
    let mut names = Vec::new();
    for arg in args {
        let list = |key: &str| -> Vec<String> {
            arg.get_attr(key)
                .ok()
                .filter(|v| !v.is_undefined() && !v.is_none())
                .map(|v| match v.as_str() {
                    Some(s) => s.split([',', ';']).map(str::to_owned).collect(),
                    None => terms(&[v]),
                })
                .unwrap_or_default()
        };
        if arg.kind() == minijinja::value::ValueKind::Map {
            let paths = list("paths");
            for file in list("files") {
                if paths.is_empty() {
                    names.push(file.clone());
                }
                for path in &paths {
                    names.push(format!("{}/{file}", path.trim_end_matches('/')));
                }
            }
        } else {
            names.extend(terms(std::slice::from_ref(arg)));
        }
    }
    names
}

/// `lookup(name, terms...)`: the items joined with commas (a list with `wantlist=True`).
pub fn lookup(
    state: &State,
    plugin: String,
    args: Rest<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let want_list: bool = kwargs.get::<Option<bool>>("wantlist")?.unwrap_or(false);
    let Some(found) = items_or_skip(state, &plugin, &args, &kwargs)? else {
        return Ok(if want_list {
            Value::from(Vec::<Value>::new())
        } else {
            Value::from(())
        });
    };
    if want_list {
        return Ok(Value::from(found));
    }
    Ok(match found.len() {
        1 => found.into_iter().next().unwrap_or_default(),
        _ => Value::from(
            found
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
    })
}

/// `query(name, terms...)` and `q(...)`: always a list.
pub fn query(
    state: &State,
    plugin: String,
    args: Rest<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let found = items_or_skip(state, &plugin, &args, &kwargs)?.unwrap_or_default();
    Ok(Value::from(found))
}

/// The lookup's items, or `None` where it failed and `errors='ignore'` or `'warn'` asks Ansible
/// to go on with nothing (`None` from `lookup`, `[]` from `query`) instead of failing the task.
/// Only a file not found is passed over: a path that would read the build host, or a value only
/// the build knows, is refused whatever `errors` says.
fn items_or_skip(
    state: &State,
    plugin: &str,
    args: &[Value],
    kwargs: &Kwargs,
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
    let found = items(state, plugin, args, kwargs);
    kwargs.assert_all_used()?;
    match found {
        Ok(found) => Ok(Some(found)),
        Err(e) if tolerant && e.kind() == ErrorKind::TemplateNotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The `file`, `directory` and `exists` tests: on the project's files (relative paths, looked
/// for like lookups); absolute paths would test the build host, which no image should depend on.
pub fn path_test(kind: &'static str) -> impl Fn(String) -> Result<bool, Error> {
    move |path: String| {
        if path.starts_with('/') {
            return Err(invalid(format!(
                "'{path}' is {kind} would test the build host, not the image; test the image's files at build time with stat"
            )));
        }
        let Some(found) = find(&path)? else {
            return Ok(false);
        };
        let meta = std::fs::metadata(root().join(found));
        Ok(match kind {
            "file" => meta.is_ok_and(|m| m.is_file()),
            "directory" => meta.is_ok_and(|m| m.is_dir()),
            _ => meta.is_ok(),
        })
    }
}
