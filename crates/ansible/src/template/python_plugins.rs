//! Filter and test plugins written in Python, called as Ansible calls them on its controller:
//! a role's `filter_plugins/` and `test_plugins/`, and the playbook's (`images/filter_plugins/`,
//! `images/test_plugins/`). One helper process, run by the Python that runs Ansible, loads
//! every plugin file once (`FilterModule().filters()`, `TestModule().tests()`; a file that does
//! not load is skipped with a warning, as Ansible's loader skips it) and answers one call a line:
//! the value and the arguments in JSON, the result or the plugin's exception back. Filters
//! imgbuild has of its own keep theirs; a plugin adds what Ansible's plugin loader would. A
//! plugin file is an input of a plan that calls one of its plugins.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

use minijinja::value::{Kwargs, Rest};
use minijinja::{Error, ErrorKind, Value};
use serde_json::Value as Json;

/// Loads the plugin files named in argv[1] (JSON `[[kind, path], ...]`), prints which file
/// defines each name and the files it skipped (as Ansible's plugin loader skips a file that does
/// not load, with a warning), then answers `{"kind", "name", "args", "kwargs"}` lines with
/// `{"ok"}` or `{"error"}`. A Python without ansible says so and stops: plugins are Ansible's.
const HELPER: &str = r#"
import importlib.util, json, sys
try:
    import ansible
except ImportError as e:
    print(json.dumps({"no_ansible": str(e)}), flush=True)
    sys.exit(3)
files = json.loads(sys.argv[1])
plugins = {"filter": {}, "test": {}}
origin = {"filter": {}, "test": {}}
skipped = []
for i, (kind, path) in enumerate(files):
    try:
        spec = importlib.util.spec_from_file_location("imgbuild_plugin_%d" % i, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if kind == "filter":
            found = module.FilterModule().filters() if hasattr(module, "FilterModule") else {}
        else:
            found = module.TestModule().tests() if hasattr(module, "TestModule") else {}
    except Exception as e:
        skipped.append("%s: %s: %s" % (path, type(e).__name__, e))
        continue
    for name, function in found.items():
        plugins[kind][name] = function
        origin[kind][name] = i
print(json.dumps({"filter": origin["filter"], "test": origin["test"], "skipped": skipped}), flush=True)
for line in sys.stdin:
    call = json.loads(line)
    try:
        result = plugins[call["kind"]][call["name"]](*call["args"], **call["kwargs"])
        answer = json.dumps({"ok": result}, default=list)
    except Exception as e:
        answer = json.dumps({"error": "%s: %s" % (type(e).__name__, e)})
    print(answer, flush=True)
"#;

/// The Python plugins of a project, and the helper process that runs them.
pub struct PythonPlugins {
    /// The filters the plugin files define, each with the index of its file.
    filters: Vec<(String, usize)>,
    /// The tests the plugin files define, each with the index of its file.
    tests: Vec<(String, usize)>,
    /// The plugin files, relative to the project root; a file whose plugin a plan calls is an
    /// input of that plan.
    files: Vec<PathBuf>,
    /// The files that did not load, each with why (Ansible skips them with a warning).
    pub skipped: Vec<String>,
    helper: Mutex<Helper>,
}

struct Helper {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for PythonPlugins {
    fn drop(&mut self) {
        if let Ok(helper) = self.helper.get_mut() {
            let _ = helper.child.kill();
            let _ = helper.child.wait();
        }
    }
}

/// The plugin files of the project at `root`, as (kind, path relative to the root), sorted.
fn plugin_files(root: &Path) -> Vec<(&'static str, PathBuf)> {
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
        for (kind, sub) in [("filter", "filter_plugins"), ("test", "test_plugins")] {
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

impl PythonPlugins {
    /// The plugins of the project at `root`, their helper started; `None` when it has none.
    pub fn for_project(root: &Path) -> Result<Option<Arc<Self>>, String> {
        let files = plugin_files(root);
        if files.is_empty() {
            return Ok(None);
        }
        let listed: Vec<(&str, String)> = files
            .iter()
            .map(|(kind, path)| (*kind, root.join(path).display().to_string()))
            .collect();
        let argv = serde_json::to_string(&listed).map_err(|e| e.to_string())?;
        let mut last = String::new();
        for python in crate::python::interpreters() {
            match start(&python, &argv) {
                Ok((helper, names)) => {
                    let list = |kind: &str| -> Vec<(String, usize)> {
                        let found = names[kind].as_object().into_iter().flatten();
                        found
                            .filter_map(|(name, i)| {
                                Some((name.clone(), usize::try_from(i.as_u64()?).ok()?))
                            })
                            .collect()
                    };
                    let skipped = names["skipped"].as_array().into_iter().flatten();
                    return Ok(Some(Arc::new(Self {
                        filters: list("filter"),
                        tests: list("test"),
                        skipped: skipped
                            .filter_map(Json::as_str)
                            .map(str::to_owned)
                            .collect(),
                        files: files.into_iter().map(|(_, path)| path).collect(),
                        helper: Mutex::new(helper),
                    })));
                }
                Err(e) => last = e,
            }
        }
        Err(format!(
            "the project's Python filter and test plugins ({}) could not be loaded: {last}",
            files
                .iter()
                .map(|(_, p)| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    /// Calls the plugin `name` of `kind` (`filter` or `test`), defined in file `file`, with
    /// `value`, `args` and `kwargs`; the file is recorded as read (an input of the plan).
    fn call(
        &self,
        (kind, name, file): (&str, &str, usize),
        value: &Value,
        args: &[Value],
        kwargs: &Kwargs,
    ) -> Result<Value, Error> {
        if let Some(path) = self.files.get(file) {
            super::lookup_state::record_read(path.clone());
        }
        let mut positional = vec![to_json(value)?];
        for arg in args {
            positional.push(to_json(arg)?);
        }
        let mut named = serde_json::Map::new();
        for key in kwargs.args() {
            let arg: Value = kwargs.get(key)?;
            named.insert(key.to_owned(), to_json(&arg)?);
        }
        let request =
            serde_json::json!({"kind": kind, "name": name, "args": positional, "kwargs": named});
        let answer = {
            let mut helper = self
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

/// Starts the helper with `python` and reads the names the plugins define.
fn start(python: &str, argv: &str) -> Result<(Helper, Json), String> {
    let mut child = Command::new(python)
        .args(["-c", HELPER, argv])
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

/// Whether `env` knows `name` as a filter (`kind` "filter") or a test: asked by evaluating it
/// on none, which fails as unknown only when it is.
fn known(env: &minijinja::Environment<'static>, kind: &str, name: &str) -> bool {
    let identifier = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !identifier {
        return true;
    }
    let (expr, unknown) = match kind {
        "filter" => (format!("none | {name}"), ErrorKind::UnknownFilter),
        _ => (format!("none is {name}"), ErrorKind::UnknownTest),
    };
    match env.compile_expression(&expr) {
        Ok(compiled) => !matches!(compiled.eval(()), Err(e) if e.kind() == unknown),
        Err(e) => e.kind() != unknown,
    }
}

/// Adds the plugins' filters and tests that `env` does not have to `env`.
pub(super) fn register(env: &mut minijinja::Environment<'static>, plugins: &Arc<PythonPlugins>) {
    for (name, file) in &plugins.filters {
        if known(env, "filter", name) {
            continue;
        }
        let (plugins, called, file) = (plugins.clone(), name.clone(), *file);
        env.add_filter(
            name.clone(),
            move |value: Value, args: Rest<Value>, kwargs: Kwargs| {
                plugins.call(("filter", &called, file), &value, &args, &kwargs)
            },
        );
    }
    for (name, file) in &plugins.tests {
        if known(env, "test", name) {
            continue;
        }
        let (plugins, called, file) = (plugins.clone(), name.clone(), *file);
        env.add_test(
            name.clone(),
            move |value: Value, args: Rest<Value>, kwargs: Kwargs| {
                plugins
                    .call(("test", &called, file), &value, &args, &kwargs)
                    .map(|v| v.is_true())
            },
        );
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
        let plugins = PythonPlugins::for_project(dir.path())
            .expect("loads (CI installs ansible)")
            .expect("plugins");
        assert_eq!(plugins.skipped.len(), 1, "{:?}", plugins.skipped);
        assert!(plugins.skipped[0].contains("broken.py: ModuleNotFoundError"));
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
    fn a_project_without_plugins_starts_no_helper() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("roles/r/tasks")).expect("mkdir");
        assert!(PythonPlugins::for_project(dir.path())
            .expect("nothing to load")
            .is_none());
    }
}
