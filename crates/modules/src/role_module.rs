//! A role's own module (`library/<name>.py`, `.sh`, or no extension): run in the image as
//! Ansible runs it on its target. Its parameters are the module's own business, so they are
//! kept as written, under the module's name; the build hands them to the module.
//!
//! A role's own module (`library/`), run in the image as Ansible runs a module on its target:
//! copied to a folder in the image's `/tmp` with a file of its arguments, run with that file's
//! path, its JSON answer read back.
//!
//! Ansible's three kinds are told apart as Ansible does: a Python module that imports
//! `ansible.module_utils` (new style) gets its arguments under `ANSIBLE_MODULE_ARGS` and needs
//! Ansible's `module_utils`, which imgbuild takes from the ansible-core of the machine running
//! the build (staged beside the module, as Ansible's AnsiballZ zip carries them, with the
//! role's own `module_utils/` and a collection module's collection's); a module
//! saying `WANT_JSON` gets JSON; any other gets `key=value` words (old style).

use serde_json::{Map, Value as Json};

use super::api::{ModuleCtx, ModuleError, ModuleResult};
use super::spec::{Downloads, FreeForm, ModuleSpec, PlanTime};
use crate::rootfs::RootFs;
use crate::target::Cmd;
use crate::types::parse_bool;
use ansible::template::filters::shlex_quote;
use std::path::{Path, PathBuf};

/// The planned task's module name for a role's own module (no task can name it).
pub const MODULE: &str = "role_module";

/// The file names a role's own module `name` may have in the role's `library/`, in the order
/// Ansible's module finder takes them.
pub fn file_names(name: &str) -> [String; 3] {
    [format!("{name}.py"), format!("{name}.sh"), name.to_owned()]
}

/// A role module's arguments as the plan keeps them: its name and its own parameters.
pub fn wrap(name: &str, args: Map<String, Json>) -> Map<String, Json> {
    let mut wrapped = Map::new();
    wrapped.insert("module".into(), Json::from(name));
    wrapped.insert("args".into(), Json::Object(args));
    wrapped
}

fn normalize(args: Json) -> Result<Json, String> {
    match &args {
        Json::Object(map) if map.get("module").is_some_and(Json::is_string) => Ok(args),
        _ => Err("a role module's task needs its module name".into()),
    }
}

/// A role's own module.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: MODULE,
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize,
    plan_time: PlanTime::RoleModule,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// The ansible-core version whose module protocol this follows (Debian 12's).
const ANSIBLE_VERSION: &str = "2.14.18";

/// How a module reads its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// Python with `ansible.module_utils`: `{"ANSIBLE_MODULE_ARGS": {...}}`.
    NewPython,
    /// `WANT_JSON`: the arguments as JSON.
    WantJson,
    /// `key=value` words.
    Old,
}

fn style(source: &str) -> Style {
    if source.contains("from ansible.module_utils")
        || source.contains("import ansible.module_utils")
    {
        Style::NewPython
    } else if source.contains("WANT_JSON") {
        Style::WantJson
    } else {
        Style::Old
    }
}

/// `role_module`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let name = args
        .get("module")
        .and_then(Json::as_str)
        .unwrap_or("module");
    let module_args = match args.get("args") {
        Some(Json::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    let local = ctx.local_path()?;
    if args.get("ansible_action").and_then(Json::as_bool) == Some(true) {
        return crate::ansible_action::run(name, &local, &module_args, ctx);
    }
    let source = std::fs::read_to_string(&local)
        .map_err(|e| ModuleError::new(format!("{}: {e}", local.display())))?;
    let style = style(&source);
    if ctx.check && style != Style::NewPython {
        // Ansible skips a module that cannot say whether it supports check mode.
        return Ok(ModuleResult {
            skipped: true,
            msg: Some("check mode is not supported for this module".into()),
            ..ModuleResult::default()
        });
    }
    let interpreter = interpreter(&source, &local)?;
    let fs = ctx.target.fs();
    let stage = PathBuf::from(format!("/tmp/.imgbuild-module-{}", std::process::id()));
    fs.remove_all(&stage)?;
    fs.mkdir_all(&stage, 0o700)?;
    let outcome = stage_and_run(ctx, name, module_args, style, interpreter, &local, &stage);
    fs.remove_all(&stage)?;
    answer(name, outcome?)
}

fn stage_and_run(
    ctx: &ModuleCtx,
    name: &str,
    mut module_args: Map<String, Json>,
    style: Style,
    mut argv: Vec<String>,
    local: &Path,
    stage: &Path,
) -> Result<crate::target::CmdOutput, ModuleError> {
    let fs = ctx.target.fs();
    let module = stage.join(local.file_name().unwrap_or_default());
    fs.copy_in(local, &module, Some(0o700))?;
    for (key, value) in internal_args(ctx, name, stage) {
        module_args.insert(key, value);
    }
    let args_text = match style {
        Style::NewPython => {
            stage_module_utils(fs, local, stage)?;
            let mut wrapped = Map::new();
            wrapped.insert("ANSIBLE_MODULE_ARGS".into(), Json::Object(module_args));
            Json::Object(wrapped).to_string()
        }
        Style::WantJson => Json::Object(module_args).to_string(),
        Style::Old => module_args
            .iter()
            .map(|(k, v)| format!("{k}={}", shlex_quote(&python_text(v))))
            .collect::<Vec<_>>()
            .join(" "),
    };
    let args_file = stage.join("args");
    fs.write_atomic(&args_file, args_text.as_bytes(), Some(0o600))?;
    argv.push(module.display().to_string());
    argv.push(args_file.display().to_string());
    let mut env = ctx.env.to_vec();
    if style == Style::NewPython {
        env.push(("PYTHONPATH".into(), stage.display().to_string()));
    }
    Ok(ctx.target.run(&Cmd {
        argv,
        env,
        cwd: None,
        stdin: None,
        user: None,
    })?)
}

/// The `_ansible_*` arguments Ansible adds to every module's (ansible-core 2.14's PASS_VARS).
fn internal_args(ctx: &ModuleCtx, name: &str, stage: &Path) -> Vec<(String, Json)> {
    let tmp = stage.display().to_string();
    vec![
        ("_ansible_check_mode".into(), Json::Bool(ctx.check)),
        ("_ansible_no_log".into(), Json::Bool(false)),
        ("_ansible_debug".into(), Json::Bool(false)),
        ("_ansible_diff".into(), Json::Bool(ctx.diff)),
        ("_ansible_verbosity".into(), Json::from(0)),
        ("_ansible_version".into(), Json::from(ANSIBLE_VERSION)),
        ("_ansible_module_name".into(), Json::from(name)),
        ("_ansible_syslog_facility".into(), Json::from("LOG_USER")),
        (
            "_ansible_selinux_special_fs".into(),
            serde_json::json!(["fuse", "nfs", "vboxsf", "ramfs", "9p", "vfat"]),
        ),
        (
            "_ansible_string_conversion_action".into(),
            Json::from("warn"),
        ),
        ("_ansible_socket".into(), Json::Null),
        ("_ansible_shell_executable".into(), Json::from("/bin/sh")),
        ("_ansible_keep_remote_files".into(), Json::Bool(false)),
        ("_ansible_tmpdir".into(), Json::from(tmp)),
        ("_ansible_remote_tmp".into(), Json::from("/tmp")),
    ]
}

/// What runs the module: Python 3 for a Python module (Ansible's interpreter discovery finds
/// `/usr/bin/python3` on every image it builds), else its `#!` line.
fn interpreter(source: &str, local: &Path) -> Result<Vec<String>, ModuleError> {
    let shebang = source
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("#!"))
        .map(str::trim);
    let python = local.extension().is_some_and(|e| e == "py")
        || shebang.is_some_and(|s| s.contains("python"));
    if python {
        return Ok(vec!["/usr/bin/python3".into()]);
    }
    match shebang {
        Some(line) if !line.is_empty() => Ok(line.split_whitespace().map(str::to_owned).collect()),
        _ => Err(ModuleError::new(format!(
            "{} has no #! line naming what runs it; Ansible needs one too",
            local.display()
        ))),
    }
}

/// Stages what a new-style module imports, as Ansible's AnsiballZ zip carries it: ansible-core's
/// `module_utils` from the machine running the build, then a role module's own
/// `module_utils/` (the role's beside its `library/`, which Ansible lays over ansible-core's),
/// and a collection module's collection `plugins/module_utils` (imported as
/// `ansible_collections.<ns>.<coll>.plugins.module_utils`).
fn stage_module_utils(fs: &RootFs, module: &Path, stage: &Path) -> Result<(), ModuleError> {
    let host = crate::ansible_code::host()?;
    let utils = stage.join("ansible/module_utils");
    copy_tree(fs, &host.module_utils(), &utils)?;
    fs.write_atomic(&stage.join("ansible/__init__.py"), b"", Some(0o644))?;
    let library = module.parent();
    if library.is_some_and(|dir| dir.ends_with("library")) {
        let own = library.and_then(Path::parent).map(|role| role.join("module_utils"));
        if let Some(own) = own.filter(|dir| dir.is_dir()) {
            copy_tree(fs, &own, &utils)?;
        }
    }
    if let Some((root, namespace, collection)) = crate::ansible_code::collection_of(module) {
        let inside = stage
            .join("ansible_collections")
            .join(namespace)
            .join(collection)
            .join("plugins/module_utils");
        let utils = root.join("plugins/module_utils");
        if utils.is_dir() {
            copy_tree(fs, &utils, &inside)?;
        }
    }
    Ok(())
}

/// Copies the Python files below a host folder into the rootfs (no byte code).
fn copy_tree(fs: &RootFs, host: &Path, inside: &Path) -> Result<(), ModuleError> {
    fs.mkdir_all(inside, 0o755)?;
    let entries = std::fs::read_dir(host)
        .map_err(|e| ModuleError::new(format!("{}: {e}", host.display())))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() && name != "__pycache__" {
            copy_tree(fs, &path, &inside.join(&name))?;
        } else if path.extension().is_some_and(|e| e == "py") {
            fs.copy_in(&path, &inside.join(&name), Some(0o644))?;
        }
    }
    Ok(())
}

/// The module's answer: the JSON object it printed (lines before and after it ignored, as
/// Ansible ignores them) as the task's result.
fn answer(name: &str, out: crate::target::CmdOutput) -> Result<ModuleResult, ModuleError> {
    if out.rc == 127 && out.stdout.trim().is_empty() {
        return Err(ModuleError::new(format!(
            "{name}: the image has no interpreter for it ({}); install it in an earlier task (Ansible needs it in the image too)",
            out.stderr.trim()
        )));
    }
    let Some(Json::Object(mut data)) = json_in(&out.stdout) else {
        let mut error = ModuleError::new(format!(
            "MODULE FAILURE: {name} printed no JSON (rc {}): {}",
            out.rc,
            out.stderr.trim()
        ));
        error
            .fields
            .insert("module_stdout".into(), Json::from(out.stdout));
        error
            .fields
            .insert("module_stderr".into(), Json::from(out.stderr));
        error.fields.insert("rc".into(), Json::from(out.rc));
        return Err(error);
    };
    let truth = |v: Option<Json>| match v {
        Some(Json::Bool(b)) => b,
        Some(Json::String(s)) => parse_bool(&s).unwrap_or(false),
        Some(Json::Number(n)) => n.as_f64().is_some_and(|n| n != 0.0),
        _ => false,
    };
    let msg = data.remove("msg").map(|m| match m {
        Json::String(s) => s,
        other => other.to_string(),
    });
    if truth(data.remove("failed")) {
        let mut error = ModuleError::new(msg.unwrap_or_else(|| format!("{name} failed")));
        error.fields = data;
        return Err(error);
    }
    Ok(ModuleResult {
        changed: truth(data.remove("changed")),
        skipped: truth(data.remove("skipped")),
        msg,
        fields: data,
        diff: None,
    })
}

/// The JSON a module printed: from the first line opening an object to the last closing it.
fn json_in(stdout: &str) -> Option<Json> {
    let lines: Vec<&str> = stdout.lines().collect();
    let start = lines.iter().position(|l| l.trim_start().starts_with('{'))?;
    let end = lines.iter().rposition(|l| l.trim_end().ends_with('}'))?;
    (start <= end)
        .then(|| serde_json::from_str(&lines[start..=end].join("\n")).ok())
        .flatten()
}

/// Python's `str()` of an argument value, as Ansible writes old-style arguments.
fn python_text(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        Json::Bool(true) => "True".into(),
        Json::Bool(false) => "False".into(),
        Json::Null => "None".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_styles_are_told_apart_as_ansible_does() {
        assert_eq!(
            style("from ansible.module_utils.basic import AnsibleModule"),
            Style::NewPython
        );
        assert_eq!(style("#!/bin/bash\n# WANT_JSON\n"), Style::WantJson);
        assert_eq!(style("#!/bin/sh\nsource $1\n"), Style::Old);
    }

    #[test]
    fn the_answer_is_the_json_between_other_output() {
        let out = crate::target::CmdOutput {
            rc: 0,
            stdout: "noise\n{\"changed\": true, \"ansible_facts\": {\"x\": 1},\n \"msg\": \"done\"}\nmore\n".into(),
            stderr: String::new(),
        };
        let result = answer("m", out).expect("an answer");
        assert!(result.changed);
        assert_eq!(result.msg.as_deref(), Some("done"));
        assert_eq!(result.fields["ansible_facts"]["x"], 1);
        let failed = crate::target::CmdOutput {
            rc: 0,
            stdout: "{\"failed\": \"True\", \"msg\": \"Multiple NTP providers\"}".into(),
            stderr: String::new(),
        };
        assert_eq!(
            answer("m", failed).expect_err("failed").msg,
            "Multiple NTP providers"
        );
        let none = crate::target::CmdOutput {
            rc: 1,
            stdout: "Traceback".into(),
            stderr: "ImportError".into(),
        };
        assert!(answer("m", none)
            .expect_err("no JSON")
            .msg
            .contains("ImportError"));
    }

    #[test]
    fn old_style_words_are_python_text_quoted() {
        assert_eq!(python_text(&Json::Bool(true)), "True");
        assert_eq!(shlex_quote(&python_text(&Json::from("a b"))), "'a b'");
    }
}
