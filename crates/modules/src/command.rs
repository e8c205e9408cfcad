//! `command`: run a program in the rootfs without a shell.
//!
//! Run a program in the rootfs; what `shell` shares with it (`creates`/`removes`,
//! `chdir`, the registered result).

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Text};
use crate::target::{Cmd, CmdOutput};
use serde_json::{Map, Value as Json};
use std::path::Path;

/// Parameters of `command`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CommandParams {
    /// The command line, split into words like a shell would (no expansion).
    #[serde(alias = "_raw_params")]
    pub cmd: Option<Text>,
    /// The program and its arguments.
    pub argv: Option<Vec<Text>>,
    /// Directory to run in.
    pub chdir: Option<Text>,
    /// Skip when this path exists.
    pub creates: Option<Text>,
    /// Skip unless this path exists.
    pub removes: Option<Text>,
    /// Standard input.
    pub stdin: Option<Text>,
    /// Append a newline to `stdin`.
    pub stdin_add_newline: Option<Flag>,
    /// Strip empty trailing lines of output.
    pub strip_empty_ends: Option<Flag>,
    /// Expand `$VARS` in arguments.
    pub expand_argument_vars: Option<Flag>,
    /// Taken and ignored with a warning, as ansible-core 2.14's command module does.
    pub executable: Option<Text>,
}

/// Neither or both of `cmd` and `argv` fail when the module runs, as Ansible's (rc 256).
impl Params for CommandParams {}

/// The words taken out of a free-form command.
pub const FREE_FORM_KEYS: &[&str] = &[
    "chdir",
    "creates",
    "removes",
    "executable",
    "stdin",
    "stdin_add_newline",
    "strip_empty_ends",
];

/// `command`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "command",
    aliases: &[],
    free_form: FreeForm::Command(FREE_FORM_KEYS),
    url_params: &[],
    normalize: super::spec::normalize_with::<CommandParams>,
    plan_time: PlanTime::RunsCommand,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// Splits a command line into words as Ansible's command module does (Python's `shlex.split`),
/// without any expansion.
pub fn split_words(line: &str) -> Result<Vec<String>, ModuleError> {
    ansible::shlex::split(line).map_err(|e| ModuleError::new(format!("{e} in: {line}")))
}

/// Whether Python's `glob.glob(pattern)` finds anything in the image: `*`, `?` and `[...]` in
/// any part of the path, a leading `.` matched only by a pattern that starts with one.
fn glob_finds(fs: &crate::rootfs::RootFs, pattern: &str) -> Result<bool, ModuleError> {
    let magic = |part: &str| part.contains(['*', '?', '[']);
    let mut paths = vec![if pattern.starts_with('/') {
        std::path::PathBuf::from("/")
    } else {
        std::path::PathBuf::new()
    }];
    for part in pattern.split('/').filter(|p| !p.is_empty()) {
        let mut next = Vec::new();
        for dir in &paths {
            if !magic(part) {
                next.push(dir.join(part));
                continue;
            }
            if !fs
                .meta_follow(dir)?
                .is_some_and(|m| m.kind == crate::rootfs::Kind::Dir)
            {
                continue;
            }
            for name in fs.list(dir)? {
                if (!name.starts_with('.') || part.starts_with('.'))
                    && ansible::glob::matches(part, &name)
                {
                    next.push(dir.join(name));
                }
            }
        }
        paths = next;
    }
    for path in paths {
        if fs.exists(&path)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `creates`/`removes` as Ansible's command module checks them (globs): a result that runs
/// nothing when `creates` finds something or `removes` finds nothing.
pub fn creates_removes(
    ctx: &ModuleCtx,
    creates: &Option<Text>,
    removes: &Option<Text>,
    cmd: Option<Json>,
) -> Result<Option<ModuleResult>, ModuleError> {
    let fs = ctx.target.fs();
    let shoulda = if ctx.check { "Would" } else { "Did" };
    let (msg, stdout) = match (creates, removes) {
        (Some(path), _) if glob_finds(fs, path.as_str())? => (
            format!("{shoulda} not run command since '{path}' exists"),
            format!("skipped, since {path} exists"),
        ),
        (_, Some(path)) if !glob_finds(fs, path.as_str())? => (
            format!("{shoulda} not run command since '{path}' does not exist"),
            format!("skipped, since {path} does not exist"),
        ),
        _ => return Ok(None),
    };
    let mut result = ModuleResult::changed(false)
        .with("cmd", cmd.unwrap_or(Json::Null))
        .with("rc", 0)
        .with("stdout", stdout.clone())
        .with("stdout_lines", vec![stdout])
        .with("stderr", "")
        .with("stderr_lines", Vec::<String>::new())
        .with("msg", msg.as_str());
    result.msg = Some(msg);
    Ok(Some(result))
}

/// `os.path.expanduser(os.path.expandvars(word))`, as ansible-core 2.14's run_command does to
/// each argument of `command`: `$NAME` and `${NAME}` from the task's environment (unknown ones
/// stay), a leading `~` or `~user` from the image's passwd (root's home for `~`).
fn expand_word(ctx: &ModuleCtx, word: &str) -> Result<String, ModuleError> {
    let env = |name: &str| {
        ctx.env
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    static VARIABLE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\$(\w+|\{[^}]*\})").expect("constant pattern") // ok: a constant
    });
    let expanded = VARIABLE.replace_all(word, |caps: &regex::Captures| {
        let name = caps[1].trim_start_matches('{').trim_end_matches('}');
        env(name).unwrap_or_else(|| caps[0].to_owned())
    });
    let Some(rest) = expanded.strip_prefix('~') else {
        return Ok(expanded.into_owned());
    };
    let (user, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let home = if user.is_empty() {
        Some(env("HOME").unwrap_or_else(|| "/root".into()))
    } else {
        let passwd = ctx.target.fs().read_text_opt(Path::new("/etc/passwd"))?;
        passwd.unwrap_or_default().lines().find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&user)).then(|| fields.get(5).map(|h| (*h).to_owned()))?
        })
    };
    Ok(match home {
        Some(home) => format!("{home}{tail}"),
        None => expanded.into_owned(),
    })
}

fn strip_end(text: &str, strip: bool) -> String {
    if strip {
        text.trim_end_matches(['\n', '\r']).to_owned()
    } else {
        text.to_owned()
    }
}

/// Turns a command's output into the result Ansible registers (`rc`, `stdout`, `stdout_lines`...).
pub fn command_result(cmd: Json, out: CmdOutput, strip: bool) -> Result<ModuleResult, ModuleError> {
    let stdout = strip_end(&out.stdout, strip);
    let stderr = strip_end(&out.stderr, strip);
    let mut fields = Map::new();
    // `command` registers its argv as a list, `shell` and `script` their text.
    fields.insert("cmd".into(), cmd);
    fields.insert("rc".into(), Json::from(out.rc));
    fields.insert(
        "stdout_lines".into(),
        Json::from(stdout.lines().collect::<Vec<_>>()),
    );
    fields.insert(
        "stderr_lines".into(),
        Json::from(stderr.lines().collect::<Vec<_>>()),
    );
    fields.insert("stdout".into(), Json::String(stdout));
    fields.insert("stderr".into(), Json::String(stderr));
    if out.rc != 0 {
        // Ansible's command and shell report a change even when the command fails.
        fields.insert("changed".into(), Json::Bool(true));
        return Err(ModuleError {
            msg: format!("non-zero return code {}", out.rc),
            fields,
        });
    }
    Ok(ModuleResult {
        changed: true,
        fields,
        ..ModuleResult::default()
    })
}

pub(super) fn run_cmd(
    ctx: &ModuleCtx,
    argv: Vec<String>,
    chdir: &Option<Text>,
    stdin: &Option<Text>,
    stdin_newline: bool,
) -> Result<CmdOutput, ModuleError> {
    let stdin = stdin.as_ref().map(|s| {
        if stdin_newline {
            format!("{s}\n")
        } else {
            s.to_string()
        }
    });
    let cmd = Cmd {
        argv,
        env: ctx.env.to_vec(),
        cwd: chdir.as_ref().map(|c| c.to_string()),
        stdin,
        user: None,
    };
    Ok(ctx.target.run(&cmd)?)
}

/// A `chdir` that is not a folder of the image fails the task before anything runs, in the
/// words of Ansible's module (Python's `os.chdir` error).
pub(super) fn enter_chdir(ctx: &ModuleCtx, chdir: &Option<Text>) -> Result<(), ModuleError> {
    let Some(chdir) = chdir else { return Ok(()) };
    let path = Path::new(chdir.as_str());
    let why = match ctx.target.fs().meta_follow(path)? {
        Some(meta) if meta.kind == crate::rootfs::Kind::Dir => return Ok(()),
        Some(_) => "[Errno 20] Not a directory",
        None => "[Errno 2] No such file or directory",
    };
    Err(ModuleError::new(format!(
        "Unable to change directory before execution: {why}: '{chdir}'"
    )))
}

/// What Ansible's command module reports in check mode once creates/removes let it run: the
/// change it would make when either was given, else a skip.
pub(super) fn not_in_check_mode(
    creates: &Option<Text>,
    removes: &Option<Text>,
    cmd: Json,
) -> ModuleResult {
    let msg = "Command would have run if not in check mode";
    let guarded = creates.is_some() || removes.is_some();
    let mut result = ModuleResult::changed(guarded)
        .with("cmd", cmd)
        .with("rc", 0)
        .with("stdout", "")
        .with("stderr", "")
        .with("msg", msg);
    result.msg = Some(msg.into());
    result.skipped = !guarded;
    result
}

/// `command`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: CommandParams = params(SPEC.name, args)?;
    let refuse = |msg: &str| {
        let mut error = ModuleError::new(msg);
        error.fields.insert("rc".into(), Json::from(256));
        error
    };
    let cmd = p.cmd.as_ref().filter(|c| !c.as_str().trim().is_empty());
    let argv: Vec<String> = match (&p.argv, cmd) {
        (Some(_), Some(_)) => return Err(refuse("only command or argv can be given, not both")),
        (Some(argv), None) if !argv.is_empty() => argv.iter().map(|a| a.to_string()).collect(),
        (_, Some(cmd)) => split_words(cmd.as_str())?,
        _ => return Err(refuse("no command given")),
    };
    let warnings: Vec<String> = p
        .executable
        .iter()
        .filter(|e| !e.as_str().is_empty())
        .map(|e| format!("As of Ansible 2.4, the parameter 'executable' is no longer supported with the 'command' module. Not using '{e}'."))
        .collect();
    let shown = Json::from(argv.clone());
    enter_chdir(ctx, &p.chdir)?;
    if let Some(skip) = creates_removes(ctx, &p.creates, &p.removes, Some(shown.clone()))? {
        return Ok(skip);
    }
    if ctx.check {
        return Ok(not_in_check_mode(&p.creates, &p.removes, shown));
    }
    let argv = argv
        .iter()
        .map(|word| expand_word(ctx, word))
        .collect::<Result<Vec<_>, _>>()?;
    let program = argv.first().cloned().unwrap_or_default();
    let out = run_cmd(
        ctx,
        argv.clone(),
        &p.chdir,
        &p.stdin,
        flag(&p.stdin_add_newline, true),
    )?;
    if out.rc == 127 && out.stderr == crate::target::not_found(&program) {
        // As ansible-core's run_command: Python's ENOENT, rc 2, nothing on stdout or stderr.
        let mut error = ModuleError::new(format!(
            "{}: install it in an earlier task ([Errno 2] No such file or directory: b'{program}')",
            crate::target::not_found(&program)
        ));
        error.fields.insert("rc".into(), Json::from(2));
        error
            .fields
            .insert("cmd".into(), Json::from(argv.join(" ")));
        for (key, value) in [
            ("stdout", Json::from("")),
            ("stderr", Json::from("")),
            ("stdout_lines", Json::Array(Vec::new())),
            ("stderr_lines", Json::Array(Vec::new())),
        ] {
            error.fields.insert(key.into(), value);
        }
        return Err(error);
    }
    let mut result = command_result(shown, out, flag(&p.strip_empty_ends, true))?;
    if !warnings.is_empty() {
        result
            .fields
            .insert("warnings".into(), Json::from(warnings));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_like_a_shell() {
        assert_eq!(
            split_words("ls -1 '/a b' \"c\\\"d\" e\\ f").expect("split"),
            vec!["ls", "-1", "/a b", "c\"d", "e f"]
        );
        assert_eq!(split_words("  ").expect("split"), Vec::<String>::new());
        assert!(split_words("echo 'open").is_err());
    }
}
