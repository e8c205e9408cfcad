//! The `with_*` loops that are lookups (`with_dict`, `with_together`, `with_subelements`,
//! `with_first_found`, `with_fileglob`), resolved at plan time, and `include_vars`, whose file
//! is read at plan time so later tasks plan with its variables.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value as Json};

use crate::error::{ErrorKind, Location, PlanError, Result};
use crate::expand::Ctx;
use crate::modules::ModuleSpec;
use crate::plan::PlannedTask;
use crate::planner::Planner;
use crate::vars::VarValue;

fn wrong(at: &Location, what: &str, expected: &'static str, found: &Json) -> PlanError {
    PlanError::new(
        at.clone(),
        ErrorKind::WrongType {
            what: what.into(),
            expected,
            found: crate::modules::types::json_type(found),
        },
    )
}

/// The folder a module's files are in (`vars/` for include_vars, `templates/` for template).
pub fn file_folder(module: &str) -> &'static str {
    crate::modules::lookup(module).map_or("files", ModuleSpec::file_folder)
}

impl Planner<'_> {
    /// The items of a lookup loop, from its rendered value.
    pub(crate) fn lookup_items(
        &mut self,
        keyword: &str,
        value: Json,
        module: &str,
        ctx: &Ctx,
        at: &Location,
    ) -> Result<Vec<Json>> {
        match keyword {
            "with_dict" => dict_items(value, at),
            "with_nested" => nested_items(value, keyword, at),
            "with_together" => together_items(value, keyword, at),
            "with_subelements" => subelements(value)
                .map_err(|message| PlanError::new(at.clone(), ErrorKind::Lookup(message))),
            "with_first_found" => self
                .first_found(value, module, ctx, at)
                .map(|found| found.into_iter().collect()),
            "with_fileglob" => self.fileglob_items(value, keyword, ctx, at),
            _ => Ok(match value {
                Json::Array(items) => items,
                other => vec![other],
            }),
        }
    }

    /// `with_fileglob`: the role's files matching the patterns, from the first search
    /// folder holding the pattern's folder.
    fn fileglob_items(
        &mut self,
        value: Json,
        keyword: &str,
        ctx: &Ctx,
        at: &Location,
    ) -> Result<Vec<Json>> {
        let patterns: Vec<String> = match value {
            Json::Array(items) => items
                .iter()
                .filter_map(Json::as_str)
                .map(str::to_owned)
                .collect(),
            Json::String(s) => vec![s],
            other => return Err(wrong(at, keyword, "a list of globs", &other)),
        };
        let mut found = Vec::new();
        for pattern in patterns {
            let (dir_part, name_part) = pattern.rsplit_once('/').unwrap_or(("", &pattern));
            for dir in self.file_search("files", ctx) {
                let dir = dir.join(dir_part);
                if !self.sources.is_dir(&dir) {
                    continue;
                }
                self.sources.record(&dir);
                let names = crate::glob::sorted_names(&self.project.root.join(&dir));
                for name in names
                    .into_iter()
                    .filter(|n| crate::glob::matches(name_part, n))
                {
                    let path = dir.join(&name);
                    if self.sources.is_file(&path) {
                        found.push(Json::String(path.display().to_string()));
                    }
                }
                break;
            }
        }
        Ok(found)
    }

    /// Where `name` is for first_found: an absolute path is a file of the machine running the
    /// build, read as Ansible's controller reads it; a relative one is looked for in `dirs`
    /// (`../vars/x.yml` is fine while it stays in the project), then from the project's root
    /// (what `role_path + '/files/x'` gives: the role's absolute path under Ansible,
    /// project-relative here).
    fn first_file(&self, name: &str, dirs: &[PathBuf], at: &Location) -> Result<Option<PathBuf>> {
        if name.starts_with('/') {
            return Ok(Some(PathBuf::from(name)).filter(|p| p.is_file()));
        }
        for dir in dirs {
            let Some(path) = inside_project(&dir.join(name)) else {
                return Err(PlanError::new(
                    at.clone(),
                    ErrorKind::Recipe(format!(
                        "first_found: '{name}' leaves the project; name a file inside it"
                    )),
                ));
            };
            if self.sources.is_file(&path) {
                return Ok(Some(path));
            }
        }
        Ok(inside_project(Path::new(name)).filter(|p| self.sources.is_file(p)))
    }

    /// `with_first_found` / `lookup('first_found')`: the first of the named files that exists,
    /// as a project path; `None` when `skip: true` and none does.
    pub(crate) fn first_found(
        &mut self,
        value: Json,
        module: &str,
        ctx: &Ctx,
        at: &Location,
    ) -> Result<Option<Json>> {
        let (files, paths, skip) = match value {
            Json::Array(items) if items.iter().all(Json::is_object) && !items.is_empty() => {
                let first = &items[0];
                (
                    list_of(&first["files"]),
                    list_of(&first["paths"]),
                    first["skip"].as_bool().unwrap_or(false),
                )
            }
            Json::Object(map) => {
                let v = Json::Object(map);
                (
                    list_of(&v["files"]),
                    list_of(&v["paths"]),
                    v["skip"].as_bool().unwrap_or(false),
                )
            }
            other => (list_of(&other), Vec::new(), false),
        };
        let mut dirs: Vec<PathBuf> = Vec::new();
        for p in &paths {
            for base in self.file_search("", ctx) {
                dirs.push(base.join(p));
            }
        }
        dirs.extend(self.file_search(file_folder(module), ctx));
        for name in &files {
            if let Some(found) = self.first_file(name, &dirs, at)? {
                self.sources.record(&found);
                return Ok(Some(Json::String(found.display().to_string())));
            }
        }
        // A file added later under any of these names would change the plan.
        for dir in &dirs {
            if self.sources.is_dir(dir) {
                self.sources.record(dir);
            }
        }
        if skip {
            return Ok(None);
        }
        Err(PlanError::new(
            at.clone(),
            ErrorKind::Recipe(format!(
                "first_found: none of {} exists (looked in {})",
                files.join(", "),
                dirs.iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        ))
    }

    /// `include_vars`: finds the file (or folder), reads it now, and puts its variables in scope
    /// for the tasks after it (as build-time values when the task itself is decided at build).
    pub(crate) fn include_vars(
        &mut self,
        task: &mut PlannedTask,
        ctx: &Ctx,
        at: &Location,
    ) -> Result<()> {
        if task.deferred.iter().any(|d| d == "file" || d == "dir") {
            task.local_search = self.search_dirs("vars", ctx);
            self.defer_all_later_vars(at);
            return Ok(());
        }
        let arg = |k: &str| task.args.get(k).and_then(Json::as_str).map(str::to_owned);
        let files: Vec<PathBuf> = match (arg("file"), arg("dir")) {
            (Some(file), _) if file.trim().is_empty() => {
                return Err(PlanError::new(
                    at.clone(),
                    ErrorKind::Lookup(
                        "Could not find file: include_vars was given an empty file name".into(),
                    ),
                ))
            }
            // A free-form name written as a block keeps no final newline (Ansible strips it).
            (Some(file), _) => vec![self.project_file(file.trim_end_matches('\n'), ctx, at)?],
            (None, Some(dir)) => {
                let dir = self.project_file(&dir, ctx, at)?;
                self.var_dir_files(&task.args, &dir, ctx, at)?
            }
            _ => Vec::new(),
        };
        let mut vars = self.read_var_files(&files)?;
        if let [single] = files.as_slice() {
            task.local_file = Some(single.display().to_string());
        }
        task.var_files = files.iter().map(|f| f.display().to_string()).collect();
        if arg("hash_behaviour").as_deref() == Some("merge") {
            // Mappings merge into the values the variables have so far (combine_vars).
            let scope = self.full(&ctx.scope);
            for (k, v) in vars.iter_mut() {
                if let Some(VarValue::Raw(old)) = scope.get(k) {
                    let mut merged = old.clone();
                    crate::vars::merge_hashes(&mut merged, std::mem::take(v));
                    *v = merged;
                }
            }
        }
        let decided_later = task.when.is_some() || task.loop_over.is_some();
        let layer = Arc::make_mut(&mut self.facts_set);
        let value = |v: Json| {
            if decided_later {
                VarValue::Deferred
            } else {
                VarValue::Raw(v)
            }
        };
        match arg("name") {
            Some(name) => {
                layer.insert(name, value(Json::Object(vars)));
            }
            None => {
                for (k, v) in vars {
                    layer.insert(k, value(v));
                }
            }
        }
        Ok(())
    }

    /// The variables of `files`, merged in order; a file that is not a mapping is refused.
    fn read_var_files(&mut self, files: &[PathBuf]) -> Result<serde_json::Map<String, Json>> {
        let mut vars = serde_json::Map::new();
        for file in files {
            let node = self.sources.yaml(file)?;
            match node.to_json() {
                Json::Object(map) => vars.extend(map),
                Json::Null => {}
                other => {
                    return Err(wrong(
                        &Location::file(file),
                        "a var file",
                        "a mapping",
                        &other,
                    ))
                }
            }
        }
        Ok(vars)
    }

    /// The var files of `include_vars: dir:` (relative to the project), as Ansible picks them.
    fn var_dir_files(
        &mut self,
        args: &Json,
        dir: &Path,
        ctx: &Ctx,
        at: &Location,
    ) -> Result<Vec<PathBuf>> {
        let text = |k: &str| args.get(k).and_then(Json::as_str).map(str::to_owned);
        let list = |k: &str| -> Option<Vec<String>> {
            args.get(k)
                .and_then(|v| {
                    serde_json::from_value::<crate::modules::types::TextList>(v.clone()).ok()
                })
                .map(|l| l.0)
        };
        let depth = match args.get("depth") {
            Some(Json::Number(n)) => n.as_u64().unwrap_or(0) as usize,
            Some(Json::String(s)) => s.trim().parse().unwrap_or(0),
            _ => 0,
        };
        let options = crate::var_dir::DirOptions {
            depth,
            files_matching: text("files_matching"),
            ignore_files: list("ignore_files").unwrap_or_default(),
            extensions: list("extensions"),
            ignore_unknown_extensions: args
                .get("ignore_unknown_extensions")
                .and_then(|v| serde_json::from_value::<crate::modules::types::Flag>(v.clone()).ok())
                .is_some_and(|f| f.or(false)),
        };
        let role_vars_main = ctx
            .role_dir
            .as_ref()
            .map(|r| self.project.root.join(r).join("vars/main.yml"));
        let root = self.project.root.join(dir);
        self.sources.record(dir);
        let files = crate::var_dir::var_files(&root, &options, role_vars_main.as_deref())
            .map_err(|message| PlanError::new(at.clone(), ErrorKind::Lookup(message)))?;
        Ok(files
            .into_iter()
            .filter_map(|f| {
                f.strip_prefix(&self.project.root)
                    .ok()
                    .map(Path::to_path_buf)
            })
            .collect())
    }

    /// A var file or folder named in a task: the role's `vars/`, the role, the task's folder,
    /// or a project path (what `with_first_found` gives).
    fn project_file(&mut self, name: &str, ctx: &Ctx, at: &Location) -> Result<PathBuf> {
        let mut candidates: Vec<PathBuf> = self
            .file_search("vars", ctx)
            .into_iter()
            .map(|d| d.join(name))
            .chain(std::iter::once(PathBuf::from(name)))
            .map(|c| inside_project(&c))
            .collect::<Option<Vec<_>>>()
            .filter(|_| !name.starts_with('/'))
            .ok_or_else(|| {
                PlanError::new(
                    at.clone(),
                    ErrorKind::Recipe(format!(
                        "include_vars: '{name}' must be a file inside the project (relative; '..' only while it stays inside)"
                    )),
                )
            })?;
        candidates.dedup();
        candidates
            .iter()
            .find(|c| self.sources.is_file(c) || self.sources.is_dir(c))
            .cloned()
            .inspect(|found| self.sources.record(found))
            .ok_or_else(|| {
                PlanError::new(
                    at.clone(),
                    ErrorKind::MissingFile {
                        what: "var file",
                        name: name.to_owned(),
                        searched: candidates
                            .iter()
                            .map(|c| c.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                    },
                )
            })
    }

    /// An include_vars whose file only the build knows: its variables are unknown until then.
    fn defer_all_later_vars(&mut self, at: &Location) {
        self.warn(
            at,
            "include_vars names its file with a build-time value: the variables it sets are known only at build time",
        );
    }
}

fn list_of(v: &Json) -> Vec<String> {
    match v {
        Json::Array(items) => items
            .iter()
            .filter_map(Json::as_str)
            .map(str::to_owned)
            .collect(),
        Json::String(s) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// A project-relative path with `.` and `..` resolved, or `None` when it climbs out of the
/// project.
fn inside_project(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::Normal(p) => out.push(p),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Python's text of a value, as Ansible's lookups print it in their errors.
fn py(value: &Json) -> String {
    crate::pyjson::repr(value)
}

/// `with_subelements: [list, 'a.b.list', {skip_missing: ...}]`: each item paired with each
/// element of its (nested) list, which the item no longer holds, as Ansible's subelements
/// lookup gives them; its error messages are Ansible's.
fn subelements(value: Json) -> std::result::Result<Vec<Json>, String> {
    let terms_error =
        |msg: &str| format!("subelements lookup expects a list of two or three items, {msg}");
    let Json::Array(terms) = value else {
        return Err(terms_error(""));
    };
    if !(2..=3).contains(&terms.len()) {
        return Err(terms_error(""));
    }
    let (Some(path), true) = (
        terms[1].as_str(),
        terms[0].is_array() || terms[0].is_object(),
    ) else {
        return Err(terms_error(
            "first a dict or a list, second a string pointing to the subkey",
        ));
    };
    let elements: Vec<Json> = match &terms[0] {
        Json::Object(map) if map.get("skipped").is_some_and(|s| s != &Json::Bool(false)) => {
            return Ok(Vec::new())
        }
        Json::Object(map) => map.values().cloned().collect(),
        Json::Array(items) => items.clone(),
        _ => Vec::new(),
    };
    if let Some(flags) = terms.get(2) {
        let only_flags = |text: &str| text.chars().all(|c| c.to_string() == "skip_missing");
        let valid = match flags {
            Json::Object(_) => true,
            Json::String(text) => only_flags(text),
            Json::Array(keys) => keys.iter().all(|k| k.as_str() == Some("skip_missing")),
            _ => false,
        };
        if !valid {
            return Err(terms_error(
                "the optional third item must be a dict with flags ('skip_missing',)",
            ));
        }
    }
    let skip_missing = terms
        .get(2)
        .and_then(|f| f.get("skip_missing"))
        .is_some_and(|v| {
            v.as_bool()
                .or_else(|| v.as_str().and_then(crate::modules::types::parse_bool))
                .unwrap_or(false)
        });
    let keys: Vec<&str> = path.split('.').collect();
    let mut items = Vec::new();
    for mut item in elements {
        if !item.is_object() {
            return Err(format!(
                "subelements lookup expects a dictionary, got '{}'",
                py(&item)
            ));
        }
        if item.get("skipped").is_some_and(|s| s != &Json::Bool(false)) {
            continue;
        }
        let sublist = take_sublist(&mut item, &keys, skip_missing)?;
        items.extend(sublist.into_iter().map(|sub| json!([item.clone(), sub])));
    }
    Ok(items)
}

/// The list at `keys` below `item`, taken out of it (Ansible's lookup pops it).
fn take_sublist(
    item: &mut Json,
    keys: &[&str],
    skip_missing: bool,
) -> std::result::Result<Vec<Json>, String> {
    // The mappings descended through, as a JSON pointer to the list's parent.
    let mut parent = String::new();
    let mut node: &Json = item;
    for (i, key) in keys.iter().enumerate() {
        let last = i + 1 == keys.len();
        let Json::Object(map) = node else {
            return Ok(Vec::new());
        };
        let Some(next) = map.get(*key) else {
            if skip_missing {
                // Ansible goes on with the next key at the same level.
                continue;
            }
            let here = py(node);
            return Err(format!(
                "could not find '{key}' key in iterated item '{here}'"
            ));
        };
        if last {
            if !next.is_array() {
                let got = py(next);
                return Err(format!("the key {key} should point to a list, got '{got}'"));
            }
            let taken = item
                .pointer_mut(&parent)
                .and_then(Json::as_object_mut)
                .and_then(|map| map.remove(*key));
            return Ok(match taken {
                Some(Json::Array(list)) => list,
                _ => Vec::new(),
            });
        }
        if !next.is_object() {
            if skip_missing {
                continue;
            }
            let got = py(next);
            return Err(format!(
                "the key {key} should point to a dictionary, got '{got}'"
            ));
        }
        parent.push('/');
        parent.push_str(&key.replace('~', "~0").replace('/', "~1"));
        node = next;
    }
    Ok(Vec::new())
}

/// `with_dict`: a `{key, value}` item per entry.
fn dict_items(value: Json, at: &Location) -> Result<Vec<Json>> {
    match value {
        Json::Object(map) => Ok(map
            .into_iter()
            .map(|(key, value)| json!({"key": key, "value": value}))
            .collect()),
        Json::Null => Ok(Vec::new()),
        // Ansible's words: the task fails with them when it runs.
        _ => Err(PlanError::new(
            at.clone(),
            ErrorKind::Lookup("with_dict expects a dict".into()),
        )),
    }
}

/// `with_nested`: every combination of one item of each list, the first list outermost.
fn nested_items(value: Json, keyword: &str, at: &Location) -> Result<Vec<Json>> {
    let Json::Array(lists) = value else {
        return Err(wrong(at, keyword, "a list of lists", &value));
    };
    let mut combos: Vec<Vec<Json>> = vec![Vec::new()];
    for list in lists {
        let items = match list {
            Json::Array(items) => items,
            other => vec![other],
        };
        combos = combos
            .iter()
            .flat_map(|c| {
                items.iter().map(move |i| {
                    let mut next = c.clone();
                    next.push(i.clone());
                    next
                })
            })
            .collect();
    }
    Ok(combos.into_iter().map(Json::Array).collect())
}

/// `with_together`: the lists zipped, the shorter ones padded with nulls.
fn together_items(value: Json, keyword: &str, at: &Location) -> Result<Vec<Json>> {
    let Json::Array(lists) = value else {
        return Err(wrong(at, keyword, "a list of lists", &value));
    };
    let lists: Vec<Vec<Json>> = lists
        .into_iter()
        .map(|l| match l {
            Json::Array(items) => items,
            other => vec![other],
        })
        .collect();
    if lists.is_empty() {
        return Err(PlanError::new(
            at.clone(),
            ErrorKind::Lookup("with_together requires at least one element in each list".into()),
        ));
    }
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    Ok((0..longest)
        .map(|i| {
            Json::Array(
                lists
                    .iter()
                    .map(|l| l.get(i).cloned().unwrap_or(Json::Null))
                    .collect(),
            )
        })
        .collect())
}
