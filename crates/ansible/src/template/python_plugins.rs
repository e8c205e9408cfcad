//! Filter, test and lookup plugins written in Python, called as Ansible calls them on its
//! controller: a role's `filter_plugins/`, `test_plugins/` and `lookup_plugins/`, the
//! playbook's (`images/…_plugins/`), and every other name the project uses that imgbuild has
//! no implementation of, found by Ansible's own loaders (ansible-core's plugins, the installed
//! collections and the project's, with their routing: `community.general.json_query`,
//! `with_community.general.flattened`). One helper process (`python_helper.py`), run by the
//! Python that runs Ansible, loads them once and answers one call a line: the value and the
//! arguments in JSON (a lookup's with the task's variables), the result or the plugin's
//! exception back. Filters imgbuild has of its own keep theirs. A project plugin file is an
//! input of a plan that calls one of its plugins.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use minijinja::value::{Kwargs, Rest};
use minijinja::{Error, ErrorKind, State, Value};
use serde_json::Value as Json;

use super::plugin_names::{self, PluginKind};
use super::Templar;

const HELPER: &str = include_str!("python_helper.py");

/// Where a plugin comes from: a project file (its index) or Ansible's own loaders.
type Origin = Option<usize>;

/// The Python plugins of a project, and the helper process that runs them: started at once
/// for a project with plugin files (their names are known only once loaded), else on the
/// first call of a name imgbuild lacks (a project's text names many words that are no
/// plugin, a shell pipe's `grep`, and planning starts no Python for them).
pub struct PythonPlugins {
    /// The project folder, where the helper runs.
    root: PathBuf,
    /// The helper's request: the plugin files and the names to find.
    request: String,
    /// The plugin files, relative to the project root; a file whose plugin a plan calls is an
    /// input of that plan.
    files: Vec<PathBuf>,
    /// The filter, test and lookup names the project uses that imgbuild has none of.
    candidates: Vec<(PluginKind, String)>,
    started: OnceLock<Result<Started, String>>,
}

/// The running helper and the plugins it holds, by kind and name, with where each comes from.
struct Started {
    plugins: BTreeMap<(PluginKind, String), Origin>,
    /// The files that did not load, each with why (Ansible skips them with a warning).
    skipped: Vec<String>,
    helper: Mutex<Helper>,
}

struct Helper {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The plugin files of the project at `root`, as (kind, path relative to the root), sorted.
fn plugin_files(root: &Path) -> Vec<(PluginKind, PathBuf)> {
    let mut folders: Vec<PathBuf> = vec![PathBuf::from("images")];
    if let Ok(roles) = std::fs::read_dir(root.join("roles")) {
        let mut roles: Vec<PathBuf> = roles
            .flatten()
            .map(|role| Path::new("roles").join(role.file_name()))
            .collect();
        roles.sort();
        folders.extend(roles);
    }
    let mut files = Vec::new();
    for folder in folders {
        for (kind, sub) in [
            (PluginKind::Filter, "filter_plugins"),
            (PluginKind::Test, "test_plugins"),
            (PluginKind::Lookup, "lookup_plugins"),
        ] {
            let Ok(entries) = std::fs::read_dir(root.join(&folder).join(sub)) else {
                continue;
            };
            let mut found: Vec<PathBuf> = entries
                .flatten()
                .map(|e| folder.join(sub).join(e.file_name()))
                .filter(|p| p.extension().is_some_and(|e| e == "py"))
                .collect();
            found.sort();
            files.extend(found.into_iter().map(|p| (kind, p)));
        }
    }
    files
}

/// The folders holding `ansible_collections/` that Ansible searches for this project: the
/// project's own (`collections/` beside the playbook), then what the environment says.
fn collections_path(root: &Path) -> std::ffi::OsString {
    let mut paths = vec![root.join("collections"), root.join("images/collections")];
    match std::env::var_os("ANSIBLE_COLLECTIONS_PATH") {
        Some(set) => paths.extend(std::env::split_paths(&set)),
        None => {
            if let Some(home) = std::env::var_os("HOME") {
                paths.push(Path::new(&home).join(".ansible/collections"));
            }
            paths.push(PathBuf::from("/usr/share/ansible/collections"));
        }
    }
    std::env::join_paths(paths).unwrap_or_default()
}

impl PythonPlugins {
    /// The plugins of the project at `root` that `base` does not have; `None` when the project
    /// has no plugin file and uses no name `base` lacks. A project with plugin files has its
    /// helper started (an error when none of the Pythons here loads them).
    pub fn for_project(root: &Path, base: &Templar) -> Result<Option<Arc<Self>>, String> {
        // The helper runs in the project folder, named absolutely for it.
        let root = std::path::absolute(root).map_err(|e| format!("{}: {e}", root.display()))?;
        let files = plugin_files(&root);
        let env = base.environment();
        let candidates: Vec<(PluginKind, String)> = plugin_names::used(&root)
            .into_iter()
            .filter(|(kind, name)| !native(env, *kind, name))
            .collect();
        if files.is_empty() && candidates.is_empty() {
            return Ok(None);
        }
        let listed: Vec<(&str, String)> = files
            .iter()
            .map(|(kind, path)| (kind.as_str(), root.join(path).display().to_string()))
            .collect();
        let names: Vec<(&str, &str)> = candidates
            .iter()
            .map(|(kind, name)| (kind.as_str(), name.as_str()))
            .collect();
        let request = serde_json::json!({
            "files": listed,
            "names": names,
            "basedir": root.join("images"),
        });
        let plugins = Self {
            request: request.to_string(),
            root,
            files: files.iter().map(|(_, path)| path.clone()).collect(),
            candidates,
            started: OnceLock::new(),
        };
        let loaded = match files.is_empty() {
            true => Ok(()),
            false => plugins.started().map(|_| ()),
        };
        if let Err(why) = loaded {
            return Err(format!(
                "the project's Python plugins ({}) could not be loaded: {why}",
                plugins
                    .files
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(Some(Arc::new(plugins)))
    }

    /// The helper, started on first use with the first Python here that imports ansible.
    fn started(&self) -> Result<&Started, String> {
        let started = self.started.get_or_init(|| {
            let mut last = String::from("no Python to try");
            for python in crate::python::interpreters() {
                match start(&python, &self.request, &self.root) {
                    Ok((helper, answer)) => return Ok(Started::new(helper, &answer)),
                    Err(e) => last = e,
                }
            }
            Err(last)
        });
        started.as_ref().map_err(Clone::clone)
    }

    /// The plugin files that did not load, each with why (Ansible skips them with a warning);
    /// none while the helper has not started.
    pub fn skipped(&self) -> Vec<String> {
        match self.started.get() {
            Some(Ok(started)) => started.skipped.clone(),
            _ => Vec::new(),
        }
    }

    /// Where the plugin `name` of `kind` comes from, starting the helper if need be; an
    /// unknown filter's or test's error when neither the project nor Ansible has it.
    fn origin(&self, kind: PluginKind, name: &str) -> Result<Origin, Error> {
        let unknown = |why: &str| {
            let kind_error = match kind {
                PluginKind::Filter => ErrorKind::UnknownFilter,
                PluginKind::Test => ErrorKind::UnknownTest,
                PluginKind::Lookup => ErrorKind::InvalidOperation,
            };
            Error::new(
                kind_error,
                format!("{} {name} is unknown: {why}", kind.as_str()),
            )
        };
        let started = self.started().map_err(|e| {
            unknown(&format!(
                "imgbuild has none of this name, and Ansible's loaders could not be asked ({e})"
            ))
        })?;
        started
            .plugins
            .get(&(kind, name.to_owned()))
            .copied()
            .ok_or_else(|| unknown("imgbuild has none of this name, and neither have Ansible's loaders (ansible-core, the installed collections, the project's)"))
    }

    /// Runs the lookup plugin `name` with `terms`, `kwargs` and the template's variables, as
    /// Ansible's templar runs it; its failure is a lookup's failure (`errors=` applies).
    fn lookup(
        &self,
        state: &State,
        name: &str,
        terms: &[Value],
        kwargs: &Kwargs,
    ) -> Result<Vec<Value>, Error> {
        let origin = self
            .origin(PluginKind::Lookup, name)
            .map_err(|e| super::lookup_state::lookup_failed(e.detail().unwrap_or("").to_owned()))?;
        let variables = super::plugin_variables::settled(state);
        let call = Call {
            kind: PluginKind::Lookup,
            name,
            origin,
        };
        let result = self
            .call(call, terms, kwargs, Json::Object(variables))
            .map_err(|e| super::lookup_state::lookup_failed(e.detail().unwrap_or("").to_owned()))?;
        Ok(match result.try_iter() {
            Ok(items) if result.as_str().is_none() => items.collect(),
            _ => vec![result],
        })
    }

    /// Calls a plugin with `args` (a filter's or test's value first) and `kwargs`; its file,
    /// when it is a project's, is recorded as read (an input of the plan).
    fn call(
        &self,
        call: Call,
        args: &[Value],
        kwargs: &Kwargs,
        variables: Json,
    ) -> Result<Value, Error> {
        let (kind, name) = (call.kind.as_str(), call.name);
        if let Some(path) = call.origin.and_then(|i| self.files.get(i)) {
            super::lookup_state::record_read(path.clone());
        }
        let positional = args.iter().map(to_json).collect::<Result<Vec<_>, _>>()?;
        let mut named = serde_json::Map::new();
        for key in kwargs.args() {
            let arg: Value = kwargs.get(key)?;
            named.insert(key.to_owned(), to_json(&arg)?);
        }
        let request = serde_json::json!({
            "kind": kind, "name": name, "args": positional, "kwargs": named, "variables": variables,
        });
        let started = self.started().map_err(|e| failed(kind, name, &e))?;
        let answer = {
            let mut helper = started
                .helper
                .lock()
                .map_err(|_| failed(kind, name, "the plugin helper failed before"))?;
            writeln!(helper.stdin, "{request}").map_err(|e| failed(kind, name, &e.to_string()))?;
            let mut line = String::new();
            helper
                .stdout
                .read_line(&mut line)
                .map_err(|e| failed(kind, name, &e.to_string()))?;
            line
        };
        let answer: Json = serde_json::from_str(&answer)
            .map_err(|_| failed(kind, name, "the plugin helper stopped"))?;
        if let Some(error) = answer.get("error").and_then(Json::as_str) {
            return Err(failed(kind, name, error));
        }
        Ok(Value::from_serialize(&answer["ok"]))
    }
}

impl Started {
    fn new(helper: Helper, answer: &Json) -> Self {
        let mut plugins = BTreeMap::new();
        for kind in [PluginKind::Filter, PluginKind::Test, PluginKind::Lookup] {
            let found = answer["origin"][kind.as_str()]
                .as_object()
                .into_iter()
                .flatten();
            for (name, origin) in found {
                let origin = origin.as_u64().and_then(|i| usize::try_from(i).ok());
                plugins.insert((kind, name.clone()), origin);
            }
        }
        let skipped = answer["skipped"].as_array().into_iter().flatten();
        Self {
            plugins,
            skipped: skipped
                .filter_map(Json::as_str)
                .map(str::to_owned)
                .collect(),
            helper: Mutex::new(helper),
        }
    }
}

impl super::lookups::OtherLookups for PythonPlugins {
    fn has_lookup(&self, name: &str) -> bool {
        let wanted = (PluginKind::Lookup, name.to_owned());
        self.candidates.contains(&wanted)
            || matches!(self.started.get(), Some(Ok(started)) if started.plugins.contains_key(&wanted))
    }

    fn run_lookup(
        &self,
        state: &State,
        name: &str,
        terms: &[Value],
        kwargs: &Kwargs,
    ) -> Result<Vec<Value>, Error> {
        self.lookup(state, name, terms, kwargs)
    }
}

/// One plugin call's target.
#[derive(Clone, Copy)]
struct Call<'a> {
    kind: PluginKind,
    name: &'a str,
    origin: Origin,
}

fn to_json(value: &Value) -> Result<Json, Error> {
    if value.is_undefined() {
        return Err(Error::new(ErrorKind::UndefinedError, "an undefined value"));
    }
    serde_json::to_value(value).map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))
}

fn failed(kind: &str, name: &str, why: &str) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("the {kind} plugin '{name}' failed: {why}"),
    )
}

/// Starts the helper with `python` in the project folder `root` (where the project's relative
/// paths, `playbook_dir` among them, lead) and reads the names the plugins define.
fn start(python: &str, argv: &str, root: &Path) -> Result<(Helper, Json), String> {
    let mut child = Command::new(python)
        .args(["-c", HELPER, argv])
        .current_dir(if root.as_os_str().is_empty() {
            Path::new(".")
        } else {
            root
        })
        .env("ANSIBLE_COLLECTIONS_PATH", collections_path(root))
        .envs(crate::python::local_temp())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{python}: {e}"))?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(format!("{python}: no pipes"));
    };
    let mut stdout = BufReader::new(stdout);
    let mut line = String::new();
    let _ = stdout.read_line(&mut line);
    match serde_json::from_str::<Json>(&line) {
        Ok(names) if names.get("no_ansible").is_none() => Ok((
            Helper {
                child,
                stdin,
                stdout,
            },
            names,
        )),
        Ok(names) => {
            let _ = child.wait();
            Err(format!(
                "{python} does not import ansible ({})",
                names["no_ansible"]
            ))
        }
        Err(_) => {
            let _ = child.kill();
            let output = child.wait_with_output().map_err(|e| e.to_string())?;
            let stderr = String::from_utf8_lossy(&output.stderr);
            Err(stderr.lines().last().unwrap_or("no answer").to_owned())
        }
    }
}

/// Whether `env` has `name` of its own: a filter or a test, asked by evaluating it on none,
/// which fails as unknown only when it is; a lookup imgbuild implements.
fn native(env: &minijinja::Environment<'static>, kind: PluginKind, name: &str) -> bool {
    let dotted_identifier = name.split('.').all(|part| {
        !part.is_empty()
            && !part.starts_with(|c: char| c.is_ascii_digit())
            && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    if !dotted_identifier && kind != PluginKind::Lookup {
        return true;
    }
    let (expr, unknown) = match kind {
        PluginKind::Lookup => return super::lookups::is_wholly_native(name),
        PluginKind::Filter => (format!("none | {name}"), ErrorKind::UnknownFilter),
        PluginKind::Test => (format!("none is {name}"), ErrorKind::UnknownTest),
    };
    match env.compile_expression(&expr) {
        Ok(compiled) => !matches!(compiled.eval(()), Err(e) if e.kind() == unknown),
        Err(e) => e.kind() != unknown,
    }
}

/// Adds the plugins' filters and tests that `env` does not have to `env`, and their lookups to
/// `lookup`, `query` and `q`.
pub(super) fn register(env: &mut minijinja::Environment<'static>, plugins: &Arc<PythonPlugins>) {
    let mut names: Vec<(PluginKind, String)> = plugins.candidates.clone();
    if let Some(Ok(started)) = plugins.started.get() {
        names.extend(started.plugins.keys().cloned());
    }
    names.sort();
    names.dedup();
    for (kind, name) in &names {
        if *kind == PluginKind::Lookup || native(env, *kind, name) {
            continue;
        }
        let (plugins, called) = (plugins.clone(), name.clone());
        let call = move |value: Value, args: Rest<Value>, kwargs: Kwargs, kind| {
            let origin = plugins.origin(kind, &called)?;
            let mut all = vec![value];
            all.extend(args.0);
            let target = Call {
                kind,
                name: &called,
                origin,
            };
            plugins.call(target, &all, &kwargs, Json::Null)
        };
        if *kind == PluginKind::Filter {
            env.add_filter(name.clone(), move |value, args, kwargs| {
                call(value, args, kwargs, PluginKind::Filter)
            });
        } else {
            env.add_test(name.clone(), move |value, args, kwargs| {
                call(value, args, kwargs, PluginKind::Test).map(|v| v.is_true())
            });
        }
    }
    if names.iter().any(|(kind, _)| *kind == PluginKind::Lookup) {
        let (one, two, three) = (plugins.clone(), plugins.clone(), plugins.clone());
        env.add_function("lookup", move |state: &State, name, args, kwargs| {
            super::lookups::lookup_with(state, name, args, kwargs, Some(&*one))
        });
        env.add_function("query", move |state: &State, name, args, kwargs| {
            super::lookups::query_with(state, name, args, kwargs, Some(&*two))
        });
        env.add_function("q", move |state: &State, name, args, kwargs| {
            super::lookups::query_with(state, name, args, kwargs, Some(&*three))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Templar;
    use crate::vars::Scope;

    /// A project with a role's filter plugin, a test plugin, and a plugin file that does not
    /// load (as ansible-core's own jinja_plugins target has).
    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let role = dir.path().join("roles/r");
        std::fs::create_dir_all(role.join("filter_plugins")).expect("mkdir");
        std::fs::create_dir_all(role.join("test_plugins")).expect("mkdir");
        std::fs::write(
            role.join("filter_plugins/words.py"),
            "from ansible.module_utils.common.text.converters import to_text\n\
             def shout(s, mark='!'):\n    return to_text(s).upper() + mark\n\
             def boom(s):\n    raise ValueError('no ' + s)\n\
             class FilterModule(object):\n    def filters(self):\n        \
             return {'shout': shout, 'boom': boom, 'upper': shout}\n",
        )
        .expect("filter");
        std::fs::write(
            role.join("filter_plugins/broken.py"),
            "import no_such_module\n",
        )
        .expect("broken");
        std::fs::write(
            role.join("test_plugins/odd.py"),
            "class TestModule(object):\n    def tests(self):\n        \
             return {'site_odd': lambda n: n % 2 == 1}\n",
        )
        .expect("test");
        dir
    }

    #[test]
    fn a_roles_plugins_are_called_as_ansible_calls_them() {
        let dir = project();
        let plugins = PythonPlugins::for_project(dir.path(), &Templar::new())
            .expect("loads (CI installs ansible)")
            .expect("plugins");
        let skipped = plugins.skipped();
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert!(skipped[0].contains("broken.py: ModuleNotFoundError"));
        let templar = Templar::new().with_python_plugins(&plugins);
        let text = |t: &str| templar.render_text(t, &Scope::default());
        assert_eq!(
            text("{{ 'hi' | shout }} {{ 'hi' | shout('?') }} {{ 'hi' | shout(mark='.') }}")
                .expect("renders"),
            Some("HI! HI? HI.".into())
        );
        assert_eq!(
            text("{{ [1, 2, 3] | select('site_odd') | list }}").expect("renders"),
            Some("[1, 3]".into())
        );
        // imgbuild's own filter of the same name keeps its own.
        assert_eq!(
            text("{{ 'hi' | upper }}").expect("renders"),
            Some("HI".into())
        );
        let error = text("{{ 'x' | boom }}").expect_err("raises");
        assert!(error.to_string().contains("ValueError: no x"), "{error}");
    }

    #[test]
    fn lookups_and_collection_plugins_are_ansibles_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let role = dir.path().join("roles/r");
        std::fs::create_dir_all(role.join("lookup_plugins")).expect("mkdir");
        std::fs::create_dir_all(role.join("tasks")).expect("mkdir");
        std::fs::write(
            role.join("lookup_plugins/site_hosts.py"),
            "from ansible.errors import AnsibleError\n\
             from ansible.plugins.lookup import LookupBase\n\
             class LookupModule(LookupBase):\n    def run(self, terms, variables=None, **kw):\n        \
             if 'bad' in terms: raise AnsibleError('no such site')\n        \
             return ['%s.%s' % (t, variables['domain']) for t in terms]\n",
        )
        .expect("lookup");
        // The names the project's tasks use, as a role would.
        std::fs::write(
            role.join("tasks/main.yml"),
            "- debug:\n    msg: \"{{ {'a': 1} | community.general.dict_kv('k') }}\"\n\
             - debug: var=item\n  with_community.general.flattened: [[1, [2]]]\n",
        )
        .expect("tasks");
        let plugins = PythonPlugins::for_project(dir.path(), &Templar::new())
            .expect("loads (CI installs ansible)")
            .expect("plugins");
        let templar = Templar::new().with_python_plugins(&plugins);
        let domain = ("domain".to_owned(), serde_json::json!("site.example"));
        let scope = Scope::default().with_layer(crate::vars::layer_from([(&domain.0, &domain.1)]));
        let text = |t: &str| templar.render_text(t, &scope);
        assert_eq!(
            text("{{ lookup('site_hosts', 'n1', 'n2') }} {{ query('community.general.flattened', [1, [2, [3]]]) }}")
                .expect("renders"),
            Some("n1.site.example,n2.site.example [1, 2, 3]".into())
        );
        assert_eq!(
            text("{{ 'v' | community.general.dict_kv('k') }}").expect("renders"),
            Some("{'k': 'v'}".into())
        );
        let error = text("{{ lookup('site_hosts', 'bad') }}").expect_err("fails");
        assert!(error.to_string().contains("no such site"), "{error}");
        assert_eq!(
            text("{{ lookup('site_hosts', 'bad', errors='ignore') }}").expect("ignored"),
            Some(String::new())
        );
    }

    #[test]
    fn a_project_without_plugins_starts_no_helper() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("roles/r/tasks")).expect("mkdir");
        assert!(PythonPlugins::for_project(dir.path(), &Templar::new())
            .expect("nothing to load")
            .is_none());
    }
}
