//! `pip`: Python packages installed in the image by its own pip, system-wide or in a
//! virtualenv the module creates, from the index the task's `extra_args`, its environment or
//! the image's pip configuration names.
//!
//! Runs the image's own pip as ansible-core 2.14's module does: a virtualenv made with
//! `virtualenv_command` when its `bin/activate` is missing, the pip of that virtualenv, of
//! `executable`, of the image's Python (`python -m pip.__main__`) or `pip3` on the PATH; then
//! `install`, `install -U`, `uninstall -y` of the requirements; changed when pip says it
//! installed or uninstalled something (or, for a requirements file or a VCS URL, when `pip
//! list` differs before and after).

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::required;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text, TextList};
use crate::target::{Cmd, CmdOutput};
use serde_json::{json, Value as Json};
use std::path::Path;

crate::choices!(
    /// What to do with the packages.
    PipState {
        Present => "present",
        Absent => "absent",
        Latest => "latest",
        ForceReinstall => "forcereinstall",
    }
);

/// Parameters of `pip`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PipParams {
    /// Requirement specifiers (`name`, `name>=1.0`), a VCS URL or a path.
    pub name: Option<TextList>,
    /// The version of the one package named.
    pub version: Option<Text>,
    /// A requirements file in the image.
    pub requirements: Option<Text>,
    /// present (default), absent, latest, forcereinstall.
    pub state: Option<Choice<PipState>>,
    /// A virtualenv in the image, created if missing.
    pub virtualenv: Option<Text>,
    /// Give the new virtualenv the system's packages.
    pub virtualenv_site_packages: Option<Flag>,
    /// What creates the virtualenv (default `virtualenv`; `python3 -m venv`).
    pub virtualenv_command: Option<Text>,
    /// The Python the virtualenv uses (not with venv).
    pub virtualenv_python: Option<Text>,
    /// More pip arguments (`--index-url ...`).
    pub extra_args: Option<Text>,
    /// Install in editable mode (`-e`).
    pub editable: Option<Flag>,
    /// The folder pip runs in (default the temporary folder).
    pub chdir: Option<Text>,
    /// The pip to run (not with a virtualenv).
    pub executable: Option<Text>,
    /// The umask pip runs with (octal).
    pub umask: Option<Text>,
}

impl Params for PipParams {
    fn check(&self) -> Result<(), String> {
        match (&self.name, &self.requirements) {
            (None, None) => {
                return Err("one of the following is required: name, requirements".into())
            }
            (Some(_), Some(_)) => {
                return Err("parameters are mutually exclusive: name|requirements".into())
            }
            _ => {}
        }
        if self.executable.is_some() && self.virtualenv.is_some() {
            return Err("parameters are mutually exclusive: executable|virtualenv".into());
        }
        Ok(())
    }
}

/// `pip`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "pip",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<PipParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// What one run of the module collected.
struct Run<'a> {
    ctx: &'a ModuleCtx<'a>,
    out: String,
    err: String,
    chdir: String,
    env: Vec<(String, String)>,
    /// The umask pip's commands run with (octal text), when the task sets one.
    umask: Option<String>,
}

impl Run<'_> {
    fn run(&mut self, argv: &[String], keep: bool) -> Result<CmdOutput, ModuleError> {
        let mut cmd = match &self.umask {
            Some(mask) => {
                let mut wrapped = vec![
                    "/bin/sh".to_owned(),
                    "-c".to_owned(),
                    format!("umask {mask} && exec \"$@\""),
                    "sh".to_owned(),
                ];
                wrapped.extend(argv.iter().cloned());
                Cmd::new(&wrapped)
            }
            None => Cmd::new(argv),
        };
        cmd.cwd = Some(self.chdir.clone());
        cmd.env.extend(self.env.iter().cloned());
        let out = self.ctx.target.run(&cmd)?;
        if keep {
            self.out.push_str(&out.stdout);
            self.err.push_str(&out.stderr);
        }
        Ok(out)
    }

    /// Ansible's `_fail`: the command, and what it printed.
    fn fail(&self, argv: &[String]) -> ModuleError {
        let mut msg = String::new();
        if !self.out.is_empty() {
            msg.push_str(&format!("stdout: {}", self.out));
        }
        if !self.err.is_empty() {
            msg.push_str(&format!("\n:stderr: {}", self.err));
        }
        let mut error = ModuleError::new(msg);
        error.fields.insert("cmd".into(), json!(argv));
        error
    }
}

fn state_of(p: &PipParams) -> Result<PipState, ModuleError> {
    match &p.state {
        None => Ok(PipState::Present),
        Some(Choice::Known(state)) => Ok(*state),
        Some(Choice::Deferred(text)) => {
            Err(ModuleError::new(format!("state '{text}' was not rendered")))
        }
    }
}

/// `pip`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: PipParams = params(SPEC.name, args)?;
    let state = state_of(&p)?;
    if state == PipState::Latest && p.version.is_some() {
        return Err(ModuleError::new(
            "version is incompatible with state=latest",
        ));
    }
    let venv = venv_path(&p);
    let mut run = Run {
        ctx,
        out: String::new(),
        err: String::new(),
        chdir: p.chdir.as_ref().map_or("/tmp", |c| c.as_str()).to_owned(),
        env: Vec::new(),
        umask: umask(&p)?,
    };
    let fs = ctx.target.fs();
    let mut venv_created = false;
    if let Some(venv) = &venv {
        if !fs.exists(&Path::new(venv).join("bin/activate"))? {
            if ctx.check {
                return Ok(ModuleResult::changed(true));
            }
            make_virtualenv(&p, venv, &mut run)?;
            venv_created = true;
        }
    }
    let pip = pip_command(&p, venv.as_deref(), &mut run)?;
    let extra = extra_args(&p)?;
    let packages = requirements_of(&p)?;
    let cmd = pip_action(&p, state, &pip, extra, &packages);
    let has_vcs = packages.iter().any(|r| is_vcs_url(r));
    if let Some(venv) = &venv {
        let path = format!("{venv}/bin:{}", crate::target::BASE_PATH);
        run.env.push(("PATH".into(), path));
    }
    if ctx.check {
        return check_mode(&p, state, &packages, &pip, &mut run);
    }
    let before = if p.requirements.is_some() || has_vcs {
        Some(installed(&pip, &mut run, false)?)
    } else {
        None
    };
    let out = run.run(&cmd, true)?;
    let not_installed =
        out.stdout.contains("not installed") || out.stderr.contains("not installed");
    if out.rc != 0 && !(out.rc == 1 && state == PipState::Absent && not_installed) {
        return Err(run.fail(&cmd));
    }
    let changed = match (state, before) {
        (PipState::Absent, _) => out.stdout.contains("Successfully uninstalled"),
        (_, None) => out.stdout.contains("Successfully installed"),
        (_, Some(before)) => before != installed(&pip, &mut run, false)?,
    };
    let version = p.version.as_ref().map(|v| v.as_str());
    Ok(ModuleResult::changed(changed || venv_created)
        .with("cmd", json!(cmd))
        .with("name", p.name.as_ref().map_or(Json::Null, |n| json!(n.0)))
        .with("version", json!(version))
        .with("state", state_word(state))
        .with(
            "requirements",
            json!(p.requirements.as_ref().map(|r| r.as_str())),
        )
        .with("virtualenv", json!(venv))
        .with("stdout", run.out)
        .with("stderr", run.err))
}

/// The virtualenv's folder, under `chdir` when it is relative to it.
fn venv_path(p: &PipParams) -> Option<String> {
    p.virtualenv.as_ref().map(|v| match &p.chdir {
        Some(chdir) => Path::new(chdir.as_str())
            .join(v.as_str())
            .display()
            .to_string(),
        None => v.as_str().to_owned(),
    })
}

/// The pip command for the state: `pip` with its verb, the task's `extra` arguments, and the
/// packages (or `-r` and the requirements file).
fn pip_action(
    p: &PipParams,
    state: PipState,
    pip: &[String],
    extra: Vec<String>,
    packages: &[String],
) -> Vec<String> {
    let mut cmd = pip.to_vec();
    cmd.extend(
        match state {
            PipState::Present => &["install"][..],
            PipState::Absent => &["uninstall", "-y"],
            PipState::Latest => &["install", "-U"],
            PipState::ForceReinstall => &["install", "-U", "--force-reinstall"],
        }
        .iter()
        .map(|w| (*w).to_owned()),
    );
    cmd.extend(extra);
    match &p.requirements {
        None => cmd.extend(packages.iter().cloned()),
        Some(file) => cmd.extend(["-r".to_owned(), file.as_str().to_owned()]),
    }
    cmd
}

fn state_word(state: PipState) -> &'static str {
    crate::types::Choices::as_str(state)
}

/// `umask`, checked as octal.
fn umask(p: &PipParams) -> Result<Option<String>, ModuleError> {
    match &p.umask {
        None => Ok(None),
        Some(mask) if u32::from_str_radix(mask.as_str(), 8).is_ok() => {
            Ok(Some(mask.as_str().to_owned()))
        }
        Some(_) => Err(ModuleError::new("umask must be an octal integer")),
    }
}

/// `virtualenv_command` run as Ansible builds it: `--system-site-packages`, or
/// `--no-site-packages` where the command has it; `-p` the Python, except for venv.
fn make_virtualenv(p: &PipParams, venv: &str, run: &mut Run) -> Result<(), ModuleError> {
    let written = p
        .virtualenv_command
        .as_ref()
        .map_or("virtualenv", |c| c.as_str());
    let mut cmd = ansible::shlex::split(written)
        .map_err(|e| ModuleError::new(format!("virtualenv_command: {e}")))?;
    let fs = run.ctx.target.fs();
    if let Some(program) = cmd.first_mut() {
        if !program.contains('/') {
            *program = required::path_of(fs, program)?;
        }
    }
    if flag(&p.virtualenv_site_packages, false) {
        cmd.push("--system-site-packages".into());
    } else {
        let help = run.run(&[cmd[0].clone(), "--help".into()], false)?;
        if help.rc != 0 {
            return Err(ModuleError::new(format!(
                "Could not get output from {} --help: {}{}",
                cmd[0], help.stdout, help.stderr
            )));
        }
        if help
            .stdout
            .split_whitespace()
            .any(|w| w == "--no-site-packages")
        {
            cmd.push("--no-site-packages".into());
        }
    }
    let is_venv = written.contains("pyvenv") || written.contains("-m venv");
    match (&p.virtualenv_python, is_venv) {
        (Some(_), true) => {
            return Err(ModuleError::new(
                "virtualenv_python should not be used when using the venv module or pyvenv as virtualenv_command",
            ))
        }
        (Some(python), false) => cmd.push(format!("-p{}", python.as_str())),
        (None, false) => cmd.push(format!("-p{}", required::interpreter(fs)?)),
        (None, true) => {}
    }
    cmd.push(venv.to_owned());
    let out = run.run(&cmd, true)?;
    if out.rc != 0 {
        return Err(run.fail(&cmd));
    }
    Ok(())
}

/// The pip to run, as Ansible's `_get_pip` chooses it.
fn pip_command(
    p: &PipParams,
    venv: Option<&str>,
    run: &mut Run,
) -> Result<Vec<String>, ModuleError> {
    let fs = run.ctx.target.fs();
    let executable = p.executable.as_ref().map(|e| e.as_str());
    if let Some(absolute) = executable.filter(|e| e.starts_with('/')) {
        return Ok(vec![absolute.to_owned()]);
    }
    if let Some(venv) = venv {
        for name in ["pip3", "pip"] {
            let candidate = format!("{venv}/bin/{name}");
            let meta = fs.meta_follow(Path::new(&candidate))?;
            if meta.is_some_and(|m| m.mode & 0o111 != 0) {
                return Ok(vec![candidate]);
            }
        }
        return Err(ModuleError::new(format!(
            "Unable to find pip in the virtualenv, {venv}, under any of these names: pip3, pip. Make sure pip is present in the virtualenv."
        )));
    }
    if executable.is_none() {
        let python = required::interpreter(fs)?;
        let probe =
            "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('pip') else 1)";
        if run
            .run(&[python.clone(), "-c".into(), probe.into()], false)?
            .rc
            == 0
        {
            return Ok(vec![python, "-m".into(), "pip.__main__".into()]);
        }
    }
    let name = executable.unwrap_or("pip3");
    required::path_of(fs, name)
        .map(|pip| vec![pip])
        .map_err(|_| {
            ModuleError::new(format!(
                "Unable to find any of {name} to use.  pip needs to be installed."
            ))
        })
}

fn extra_args(p: &PipParams) -> Result<Vec<String>, ModuleError> {
    let mut words = match &p.extra_args {
        Some(args) => ansible::shlex::split(args.as_str())
            .map_err(|e| ModuleError::new(format!("extra_args: {e}")))?,
        None => Vec::new(),
    };
    if flag(&p.editable, false) && !words.iter().any(|w| w == "-e") {
        words.push("-e".into());
    }
    Ok(words)
}

/// The requirement specifiers, rebuilt as Ansible's `_recover_package_name` rebuilds them
/// (`['django>1.1', '<2']` is one), with `version` joined to the one package.
fn requirements_of(p: &PipParams) -> Result<Vec<String>, ModuleError> {
    let Some(names) = &p.name else {
        return Ok(Vec::new());
    };
    let mut packages = recover_package_names(&names.0);
    if let Some(version) = &p.version {
        if packages.len() > 1 {
            return Err(ModuleError::new("'version' argument is ambiguous when installing multiple package distributions. Please specify version restrictions next to each package in 'name' argument."));
        }
        if let Some(first) = packages.first_mut() {
            if first.contains(['=', '<', '>', '!', '~']) {
                return Err(ModuleError::new("The 'version' argument conflicts with any version specifier provided along with a package name. Please keep the version specifier, but remove the 'version' argument."));
            }
            let version = version.as_str().trim_start();
            let separator = if version.starts_with(|c: char| c.is_ascii_digit()) {
                "=="
            } else {
                ""
            };
            *first = format!("{first}{separator}{version}");
        }
    }
    Ok(packages)
}

fn recover_package_names(names: &[String]) -> Vec<String> {
    let is_name = |part: &str| {
        !["<=", ">=", "==", "!=", "~=", "<", ">"]
            .iter()
            .any(|op| part.trim_start().starts_with(op))
    };
    let mut packages: Vec<Vec<&str>> = Vec::new();
    let mut in_brackets = false;
    for part in names.iter().flat_map(|n| n.split(',')) {
        if (is_name(part) && !in_brackets) || packages.is_empty() {
            packages.push(Vec::new());
        }
        if part.contains('[') {
            in_brackets = true;
        }
        if in_brackets && part.contains(']') {
            in_brackets = false;
        }
        if let Some(last) = packages.last_mut() {
            last.push(part);
        }
    }
    packages.into_iter().map(|parts| parts.join(",")).collect()
}

fn is_vcs_url(name: &str) -> bool {
    ["svn+", "git+", "hg+", "bzr+"]
        .iter()
        .any(|vcs| name.starts_with(vcs))
}

/// `pip list --format=freeze` (or `pip freeze` for an old pip).
fn installed(pip: &[String], run: &mut Run, keep: bool) -> Result<String, ModuleError> {
    let mut list = pip.to_vec();
    list.extend(["list".into(), "--format=freeze".into()]);
    let saved = run.env.clone();
    run.env.extend(
        ["LANG", "LC_ALL", "LC_MESSAGES"]
            .iter()
            .map(|k| ((*k).to_owned(), "C".to_owned())),
    );
    let out = run.run(&list, keep);
    run.env = saved;
    let out = out?;
    if out.rc == 0 {
        return Ok(out.stdout);
    }
    let mut freeze = pip.to_vec();
    freeze.push("freeze".into());
    let out = run.run(&freeze, keep)?;
    if out.rc != 0 {
        return Err(run.fail(&freeze));
    }
    Ok(out.stdout)
}

/// Check mode: what would change, from what is installed (a requirements file, extra
/// arguments or `latest` always would).
fn check_mode(
    p: &PipParams,
    state: PipState,
    packages: &[String],
    pip: &[String],
    run: &mut Run,
) -> Result<ModuleResult, ModuleError> {
    if p.extra_args.is_some()
        || p.requirements.is_some()
        || state == PipState::Latest
        || packages.is_empty()
    {
        return Ok(ModuleResult::changed(true));
    }
    let listed = installed(pip, run, true)?;
    let lines: Vec<&str> = listed.lines().filter(|l| !l.is_empty()).collect();
    let changed = packages.iter().any(|package| {
        let present = super::pip_version::is_present(package, &lines);
        (state == PipState::Present && !present) || (state == PipState::Absent && present)
    });
    let mut list = pip.to_vec();
    list.extend(["list".into(), "--format=freeze".into()]);
    Ok(ModuleResult::changed(changed)
        .with("cmd", list.join(" "))
        .with("stdout", run.out.clone())
        .with("stderr", run.err.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn package_names_are_rebuilt_as_ansible_does() {
        assert_eq!(
            recover_package_names(&names(&[
                "django>1.11.1",
                "<1.11.3",
                "ipaddress",
                "simpleproject>1.1.0",
                "<2.0.0"
            ])),
            names(&[
                "django>1.11.1,<1.11.3",
                "ipaddress",
                "simpleproject>1.1.0,<2.0.0"
            ])
        );
        assert_eq!(
            recover_package_names(&names(&["django>1.11.1,<1.11.3,ipaddress"])),
            names(&["django>1.11.1,<1.11.3", "ipaddress"])
        );
        assert_eq!(
            recover_package_names(&names(&["requests[security,socks]>=2"])),
            names(&["requests[security,socks]>=2"])
        );
    }

    #[test]
    fn vcs_urls_are_told_apart() {
        assert!(is_vcs_url("git+https://example.invalid/x.git"));
        assert!(!is_vcs_url("gitpython"));
    }
}
