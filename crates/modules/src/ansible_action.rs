//! A task whose action is a Python action plugin imgbuild does not implement (a role's
//! `action_plugins/`, a collection's `plugins/action/`): run by ansible-core's own executor, as
//! ansible-playbook runs a play, with the `community.general.chroot` connection into the build's
//! sandbox, as a site runs its roles against a chroot today. One runner process per build runs
//! these plays (`ansible_runner`); where it cannot drive the ansible-core installed,
//! ansible-playbook runs each. The plugin runs in Ansible's controller process with Ansible's
//! connection, loaders and templar, and every command it sends runs in the sandbox (its
//! `chroot_exe` is imgbuild entering the sandbox: see `engine::sandbox_enter`).
//!
//! The task is written as a one-task play: its arguments as the plan resolved them, marked
//! `!unsafe` so that Ansible does not template them a second time, with its `become_user` and
//! `environment`, in check and diff mode when the build is. A callback of imgbuild's writes the
//! task's result, which is registered as Ansible registers it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Map, Value as Json};

use super::api::{ModuleCtx, ModuleError, ModuleResult};
use crate::ansible_runner;
use crate::types::parse_bool;

/// The argument under which imgbuild's binary enters a running build sandbox (the chroot
/// connection's `chroot_exe`).
pub const SANDBOX_ENTER_ARG: &str = "__sandbox-enter";

/// The host name of the image in the one-task play's inventory.
const HOST: &str = "image";

/// A stdout callback of imgbuild's: writes the task's status and result to `IMGBUILD_RESULT`.
const CALLBACK: &str = r#"
import json, os
from ansible.parsing.ajson import AnsibleJSONEncoder
from ansible.plugins.callback import CallbackBase

class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'stdout'
    CALLBACK_NAME = 'imgbuild_result'

    def _keep(self, result, status):
        with open(os.environ['IMGBUILD_RESULT'], 'w') as out:
            json.dump({'status': status, 'result': result._result}, out, cls=AnsibleJSONEncoder)

    def v2_runner_on_ok(self, result):
        self._keep(result, 'ok')

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._keep(result, 'failed')

    def v2_runner_on_skipped(self, result):
        self._keep(result, 'skipped')

    def v2_runner_on_unreachable(self, result):
        self._keep(result, 'unreachable')
"#;

/// Runs action `action` (its plugin at `plugin`) with `args` through ansible-playbook.
pub fn run(
    action: &str,
    plugin: &Path,
    args: &Map<String, Json>,
    ctx: &ModuleCtx,
) -> Result<ModuleResult, ModuleError> {
    let init = ctx.target.sandbox_init().ok_or_else(|| {
        ModuleError::new(format!(
            "{action}: an action plugin runs through ansible-playbook, into a build sandbox; this target is none"
        ))
    })?;
    let work = play_folder(ctx.target.host_work())
        .map_err(|e| ModuleError::new(format!("a folder for ansible-playbook: {e}")))?;
    let dir = work.path();
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text)
            .map_err(|e| ModuleError::new(format!("writing {name} for ansible-playbook: {e}")))
    };
    write("play.yml", &play(action, args, ctx))?;
    write("inventory.yml", &inventory(init, &dir.join("chroot"))?)?;
    write("chroot", &chroot_exe()?)?;
    set_executable(&dir.join("chroot"))?;
    let folders = PluginFolders::of(plugin);
    let request = serde_json::json!({
        "dir": dir.display().to_string(),
        "action_plugins": folders.action_plugins,
        "library": folders.library,
        "module_utils": folders.module_utils,
        "check": ctx.check,
        "diff": ctx.diff,
    });
    let said = match ansible_runner::run(&request, &runner_env(ctx.project_root)) {
        ansible_runner::Answer::Ran => String::new(),
        ansible_runner::Answer::Refused(message) => message,
        ansible_runner::Answer::Unsupported(_) => {
            std::fs::create_dir_all(dir.join("callbacks")).map_err(|e| {
                ModuleError::new(format!("ansible-playbook's callbacks folder: {e}"))
            })?;
            write("callbacks/imgbuild_result.py", CALLBACK)?;
            let out = ansible_playbook(action, &folders, dir, ctx)?;
            format!(
                "{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        }
    };
    let answer = std::fs::read_to_string(dir.join("result.json")).ok();
    result(action, answer.as_deref(), &said)
}

/// The folders Ansible finds the plugin and its role's modules and module_utils in.
struct PluginFolders {
    action_plugins: Vec<String>,
    library: Vec<String>,
    module_utils: Vec<String>,
}

impl PluginFolders {
    /// The plugin's folder; a role's plugin may also call the role's own modules and
    /// module_utils.
    fn of(plugin: &Path) -> Self {
        let folder = plugin.parent().unwrap_or(Path::new("."));
        let text = |p: &Path| vec![p.display().to_string()];
        let role = folder
            .ends_with("action_plugins")
            .then(|| folder.parent().unwrap_or(Path::new(".")));
        let of_role = |sub: &str| {
            role.map(|role| role.join(sub))
                .filter(|dir| dir.is_dir())
                .map_or_else(Vec::new, |dir| text(&dir))
        };
        PluginFolders {
            action_plugins: text(folder),
            library: of_role("library"),
            module_utils: of_role("module_utils"),
        }
    }
}

/// The folder of the play, its inventory and its result (0700, removed when the task ends): in
/// the build's work folder when the target names one, so a killed build leaves nothing in the
/// machine's temporary folder.
fn play_folder(host_work: Option<&Path>) -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    let mut folder = tempfile::Builder::new();
    // Readable by root alone: the play holds the task's resolved arguments.
    folder
        .prefix("imgbuild-ansible-")
        .permissions(std::fs::Permissions::from_mode(0o700));
    match host_work {
        Some(parent) => folder.tempdir_in(parent),
        None => folder.tempdir(),
    }
}

/// The one-task play.
fn play(action: &str, args: &Map<String, Json>, ctx: &ModuleCtx) -> String {
    let mut task = format!(
        "    - {}: {}\n",
        action,
        unsafe_yaml(&Json::Object(args.clone()))
    );
    if let Some(user) = ctx.target.user() {
        task.push_str(&format!(
            "      become: true\n      become_user: {}\n",
            unsafe_yaml(&Json::from(user.name.as_str()))
        ));
    }
    if !ctx.env.is_empty() {
        let env: Map<String, Json> = ctx
            .env
            .iter()
            .map(|(k, v)| (k.clone(), Json::from(v.as_str())))
            .collect();
        task.push_str(&format!(
            "      environment: {}\n",
            unsafe_yaml(&Json::Object(env))
        ));
    }
    format!("- hosts: {HOST}\n  gather_facts: false\n  tasks:\n{task}")
}

/// The inventory: the image, reached through the chroot connection at its sandbox's root.
fn inventory(init: u32, chroot_exe: &Path) -> Result<String, ModuleError> {
    let vars = serde_json::json!({
        "ansible_connection": "community.general.chroot",
        "ansible_host": format!("/proc/{init}/root"),
        "ansible_chroot_exe": chroot_exe.display().to_string(),
        "ansible_python_interpreter": "auto_silent",
    });
    Ok(format!(
        "all:\n  hosts:\n    {HOST}: {}\n",
        serde_json::to_string(&vars).map_err(|e| ModuleError::new(e.to_string()))?
    ))
}

/// The chroot connection's `chroot_exe`: imgbuild entering the sandbox.
fn chroot_exe() -> Result<String, ModuleError> {
    let exe = std::env::current_exe()
        .map_err(|e| ModuleError::new(format!("imgbuild's own path: {e}")))?;
    Ok(format!(
        "#!/bin/sh\nexec {} {SANDBOX_ENTER_ARG} \"$@\"\n",
        ansible::template::filters::shlex_quote(&exe.display().to_string())
    ))
}

fn set_executable(path: &Path) -> Result<(), ModuleError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| ModuleError::new(format!("{}: {e}", path.display())))
}

/// Runs ansible-playbook in `dir` for the play written there (where the action runner cannot).
fn ansible_playbook(
    action: &str,
    folders: &PluginFolders,
    dir: &Path,
    ctx: &ModuleCtx,
) -> Result<std::process::Output, ModuleError> {
    let text = |p: &Path| p.display().to_string();
    let mut command = Command::new("ansible-playbook");
    command
        .args(["-i", "inventory.yml", "play.yml"])
        .args(ctx.check.then_some("--check"))
        .args(ctx.diff.then_some("--diff"))
        .current_dir(dir)
        .envs(runner_env(ctx.project_root))
        .env("ANSIBLE_ACTION_PLUGINS", folders.action_plugins.join(":"))
        .env("ANSIBLE_STDOUT_CALLBACK", "imgbuild_result")
        .env("ANSIBLE_CALLBACK_PLUGINS", text(&dir.join("callbacks")))
        .env("IMGBUILD_RESULT", text(&dir.join("result.json")))
        .env("ANSIBLE_LOCAL_TEMP", text(&dir.join("local")))
        .stdin(Stdio::null());
    for (key, folders) in [
        ("ANSIBLE_LIBRARY", &folders.library),
        ("ANSIBLE_MODULE_UTILS", &folders.module_utils),
    ] {
        if !folders.is_empty() {
            command.env(key, folders.join(":"));
        }
    }
    die_with_build(&mut command);
    command.output().map_err(|e| {
        ModuleError::new(format!(
            "{action} is an action plugin, which runs with ansible-playbook, and ansible-playbook cannot be started ({e}): install ansible-core on the machine running the build (Debian's ansible, or pip install ansible-core)"
        ))
    })
}

/// The environment Ansible runs the plays with: the project's collections, temporary files
/// outside the image's layer. The same for every task of a build, so one runner serves them.
fn runner_env(project: &Path) -> Vec<(String, String)> {
    let text = |p: &Path| p.display().to_string();
    let mut env = vec![
        // The image's /tmp is the sandbox's scratch folder, never part of a layer.
        ("ANSIBLE_REMOTE_TMP".into(), "/tmp/.imgbuild-ansible".into()),
        ("ANSIBLE_RETRY_FILES_ENABLED".into(), "false".into()),
        ("ANSIBLE_NOCOLOR".into(), "1".into()),
    ];
    if let Some((key, folder)) = ansible::python::local_temp() {
        env.push((key.into(), text(&folder)));
    }
    let collections: Vec<PathBuf> = ["collections", "images/collections"]
        .iter()
        .map(|sub| project.join(sub))
        .filter(|p| p.is_dir())
        .collect();
    if !collections.is_empty() {
        let mut paths: Vec<String> = collections.iter().map(|p| text(p)).collect();
        if let Ok(host) = crate::ansible_code::host() {
            paths.extend(host.collections.iter().map(|p| text(p)));
        }
        env.push(("ANSIBLE_COLLECTIONS_PATH".into(), paths.join(":")));
    }
    env
}

/// ansible-playbook dies with the build that started it.
fn die_with_build(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and makes one raw system call.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(std::io::Error::from)
        });
    }
}

/// The task's result as imgbuild registers it, from the callback's file (`answer`), or Ansible's
/// own words (`said`) when it wrote none.
fn result(action: &str, answer: Option<&str>, said: &str) -> Result<ModuleResult, ModuleError> {
    let kept: Option<Json> = answer.and_then(|text| serde_json::from_str(text).ok());
    let Some((status, Json::Object(mut data))) = kept.and_then(|mut kept| {
        let status = kept.get("status")?.as_str()?.to_owned();
        Some((status, kept.get_mut("result")?.take()))
    }) else {
        return Err(ModuleError::new(format!(
            "{action}: Ansible ran no task: {}",
            ansible_errors(said)
        )));
    };
    data.retain(|key, _| !key.starts_with("_ansible"));
    let truth = |v: Option<Json>| match v {
        Some(Json::Bool(b)) => b,
        Some(Json::String(s)) => parse_bool(&s).unwrap_or(false),
        _ => false,
    };
    let msg = data.remove("msg").map(|m| match m {
        Json::String(s) => s,
        other => other.to_string(),
    });
    if status == "failed" || status == "unreachable" || truth(data.get("failed").cloned()) {
        data.remove("failed");
        let mut error = ModuleError::new(msg.unwrap_or_else(|| format!("{action} failed")));
        error.fields = data;
        return Err(error);
    }
    data.remove("failed");
    Ok(ModuleResult {
        changed: truth(data.remove("changed")),
        skipped: status == "skipped" || truth(data.remove("skipped")),
        msg,
        fields: data,
        diff: None,
    })
}

/// Ansible's own error lines (`ERROR! ...`), never the excerpt of the play it quotes after
/// them: the play holds the task's resolved arguments, which may be secrets.
fn ansible_errors(said: &str) -> String {
    let errors: Vec<&str> = said
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("ERROR!"))
        .collect();
    match errors.is_empty() {
        true => {
            "it printed no error line; run the role with ansible-playbook -vvv to see why".into()
        }
        false => errors.join(" | "),
    }
}

/// `value` as YAML in flow style, each string tagged `!unsafe` (Ansible never templates it).
fn unsafe_yaml(value: &Json) -> String {
    match value {
        Json::String(s) => format!("!unsafe {}", Json::from(s.as_str())),
        Json::Array(items) => {
            let items: Vec<String> = items.iter().map(unsafe_yaml).collect();
            format!("[{}]", items.join(", "))
        }
        Json::Object(map) => {
            let entries: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Json::from(k.as_str()), unsafe_yaml(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_unsafe_and_everything_else_is_json() {
        let args = serde_json::json!({"cmd": "echo {{ x }} \"q\"\n", "n": [1, true, null], "m": {"k": "v"}});
        assert_eq!(
            unsafe_yaml(&args),
            r#"{"cmd": !unsafe "echo {{ x }} \"q\"\n", "n": [1, true, null], "m": {"k": !unsafe "v"}}"#
        );
    }

    #[test]
    fn the_play_is_kept_in_the_build_work_folder_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let work = tempfile::tempdir().expect("tempdir");
        let folder = play_folder(Some(work.path())).expect("play folder");
        assert_eq!(folder.path().parent(), Some(work.path()));
        let mode = std::fs::metadata(folder.path())
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        let gone = folder.path().to_owned();
        drop(folder);
        assert!(!gone.exists());
    }

    #[test]
    fn the_result_is_registered_as_ansible_registers_it() {
        let ok = r#"{"status": "ok", "result": {"changed": true, "rc": 0, "stdout": "hi", "_ansible_no_log": false, "msg": ""}}"#;
        let done = result("a", Some(ok), "").expect("ok");
        assert!(done.changed && !done.skipped);
        assert_eq!(done.fields["rc"], 0);
        assert!(!done.fields.contains_key("_ansible_no_log"));
        let failed = r#"{"status": "failed", "result": {"failed": true, "rc": 3, "msg": "non-zero return code"}}"#;
        let error = result("a", Some(failed), "").expect_err("failed");
        assert_eq!(error.msg, "non-zero return code");
        assert_eq!(error.fields["rc"], 3);
        let skipped = r#"{"status": "skipped", "result": {"skip_reason": "x"}}"#;
        assert!(result("a", Some(skipped), "").expect("skipped").skipped);
    }

    #[test]
    fn no_result_gives_ansible_playbooks_error_but_not_the_play_it_quotes() {
        let said = "ERROR! couldn't resolve module/action 'site_action'\n\nThe offending line appears to be:\n\n    - site_action: {\"password\": !unsafe \"hunter2\"}\n";
        let error = result("a", None, said).expect_err("no result");
        assert!(
            error.msg.contains("couldn't resolve module/action"),
            "{}",
            error.msg
        );
        assert!(!error.msg.contains("hunter2"), "{}", error.msg);
    }
}
