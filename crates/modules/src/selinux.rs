//! `selinux` (`ansible.posix.selinux`): the image's SELinux mode and policy in its
//! `/etc/selinux/config`. Nothing runs SELinux while an image is built, so the running state is
//! never changed: the node takes the configured state when it boots.
//!
//! `selinux` (`ansible.posix.selinux`) as an image build must run it: the mode and policy in
//! the image's config file, never the running kernel's state (nothing runs SELinux while the
//! image is built, as on a builder without it, where Ansible's module finds SELinux disabled
//! and says a reboot is needed); the policy in effect is the config file's, as libselinux reads
//! it (`targeted` when it names none).

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::required;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text};
use crate::target::Cmd;
use crate::types::Choices;
use serde_json::{json, Value as Json};
use std::path::Path;

crate::choices!(
    /// The SELinux mode.
    SelinuxState {
        Enforcing => "enforcing",
        Permissive => "permissive",
        Disabled => "disabled",
    }
);

/// Parameters of `selinux`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SelinuxParams {
    /// enforcing, permissive or disabled.
    pub state: Choice<SelinuxState>,
    /// The policy (`targeted`); needed unless disabled.
    pub policy: Option<Text>,
    /// The config file (default `/etc/selinux/config`).
    #[serde(alias = "conf", alias = "file")]
    pub configfile: Option<Text>,
    /// Set `selinux=0` on the kernels' command lines with grubby, or take it off.
    pub update_kernel_param: Option<Flag>,
}

impl Params for SelinuxParams {}

/// `selinux`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "selinux",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<SelinuxParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// The value of the first `KEY=` line, as the module's `line.split('=')[1].strip()`.
fn config_value(text: &str, key: &str) -> Option<String> {
    text.lines()
        .find(|line| line.starts_with(&format!("{key}=")))
        .and_then(|line| line.split('=').nth(1))
        .map(|value| value.trim().to_owned())
}

/// The text with every `KEY=...` line replaced by `KEY=value` (appended when none), each line
/// ended by a newline, as the module rewrites the file.
fn with_value(text: &str, key: &str, value: &str) -> String {
    let mut found = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with(&format!("{key}=")) {
            found = true;
            out.push_str(&format!("{key}={value}\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !found {
        out.push_str(&format!("{key}={value}\n"));
    }
    out
}

/// The image's Python must have libselinux's bindings, as the module needs them.
fn require_bindings(ctx: &ModuleCtx) -> Result<(), ModuleError> {
    let python = required::interpreter(ctx.target.fs())?;
    let out = ctx
        .target
        .run(&Cmd::new(&[python.as_str(), "-c", "import selinux"]))?;
    if out.rc == 0 {
        return Ok(());
    }
    Err(ModuleError::new(format!(
        "Failed to import the required Python library (libselinux-python) on the image's Python {python}. Please read the module documentation and install it in the appropriate location."
    )))
}

/// The config file's text, or Ansible's failure when it is not there.
fn config_text(ctx: &ModuleCtx, configfile: &str) -> Result<String, ModuleError> {
    match ctx.target.fs().read_text_opt(Path::new(configfile))? {
        Some(text) => Ok(text),
        None => {
            let mut error = ModuleError::new(format!("Unable to find file {configfile}"));
            error.fields.insert(
                "details".into(),
                json!("Please install SELinux-policy package, if this package is not installed previously."),
            );
            Err(error)
        }
    }
}

/// What the module changed and said.
#[derive(Default)]
struct Outcome {
    changed: bool,
    msgs: Vec<String>,
}

/// The policy: the config file's `SELINUXTYPE` (what libselinux reads as the running one)
/// set to `policy`.
fn set_policy(
    ctx: &ModuleCtx,
    configfile: &str,
    text: &mut String,
    policy: &Option<String>,
    outcome: &mut Outcome,
) -> Result<bool, ModuleError> {
    let shown = |v: &Option<String>| v.clone().unwrap_or_else(|| "None".into());
    let config_policy = config_value(text, "SELINUXTYPE");
    let runtime_policy = config_policy.clone().unwrap_or_else(|| "targeted".into());
    if policy.as_deref() != Some(runtime_policy.as_str()) {
        if ctx.check {
            return Ok(true);
        }
        outcome.msgs.push(format!(
            "Running SELinux policy changed from '{runtime_policy}' to '{}'",
            shown(policy)
        ));
        outcome.changed = true;
    }
    if *policy != config_policy {
        if ctx.check {
            return Ok(true);
        }
        let wanted = shown(policy);
        let fs = ctx.target.fs();
        if !fs.exists(&Path::new("/etc/selinux").join(&wanted).join("policy"))? {
            return Err(ModuleError::new(format!(
                "Policy {wanted} does not exist in /etc/selinux/"
            )));
        }
        *text = with_value(text, "SELINUXTYPE", &wanted);
        fs.write_atomic(Path::new(configfile), text.as_bytes(), None)?;
        outcome.msgs.push(format!(
            "SELinux policy configuration in '{configfile}' changed from '{}' to '{wanted}'",
            shown(&config_policy)
        ));
        outcome.changed = true;
    }
    Ok(false)
}

/// `selinux`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: SelinuxParams = params(SPEC.name, args)?;
    let state = match &p.state {
        Choice::Known(state) => *state,
        Choice::Deferred(text) => {
            return Err(ModuleError::new(format!("state '{text}' was not rendered")))
        }
    };
    require_bindings(ctx)?;
    let configfile = p
        .configfile
        .as_ref()
        .map_or("/etc/selinux/config", |c| c.as_str())
        .to_owned();
    let mut text = config_text(ctx, &configfile)?;
    if flag(&p.update_kernel_param, false) {
        // Kernel command lines belong to the node's boot, not to grubby in an image.
        required::path_of(ctx.target.fs(), "grubby")
            .map_err(|_| ModuleError::new("'grubby' command not found on host"))?;
        return Err(ModuleError::new(
            "update_kernel_param is not supported yet in image builds: set selinux=0 (or not) on the node's kernel command line where its boot is configured",
        ));
    }
    let policy = match (&p.policy, state) {
        (Some(policy), _) => Some(policy.as_str().to_owned()),
        (None, SelinuxState::Disabled) => config_value(&text, "SELINUXTYPE"),
        (None, _) => {
            return Err(ModuleError::new(
                "Policy is required if state is not 'disabled'",
            ))
        }
    };
    let mut outcome = Outcome::default();
    if set_policy(ctx, &configfile, &mut text, &policy, &mut outcome)? {
        // Check mode stops at the first change, as the module exits there.
        return Ok(ModuleResult::changed(true));
    }
    let word = state.as_str();
    let config_state = config_value(&text, "SELINUX");
    if config_state.as_deref() != Some(word) {
        if !ctx.check {
            text = with_value(&text, "SELINUX", word);
            ctx.target
                .fs()
                .write_atomic(Path::new(&configfile), text.as_bytes(), None)?;
        }
        let before = config_state.unwrap_or_else(|| "None".into());
        outcome.msgs.push(format!(
            "Config SELinux state changed from '{before}' to '{word}'"
        ));
        outcome.changed = true;
    }
    let reboot = state != SelinuxState::Disabled;
    let mut result = ModuleResult::changed(outcome.changed)
        .with("msg", outcome.msgs.join(", "))
        .with("configfile", configfile)
        .with("policy", json!(policy))
        .with("state", word)
        .with("reboot_required", reboot);
    if reboot {
        let warning = format!("Reboot is required to set SELinux state to '{word}'");
        result = result.with("warnings", json!([warning]));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_lines_are_read_and_rewritten_as_the_module_does() {
        let text = "# comment\nSELINUX=disabled\nSELINUXTYPE= default \n";
        assert_eq!(config_value(text, "SELINUX").as_deref(), Some("disabled"));
        assert_eq!(
            config_value(text, "SELINUXTYPE").as_deref(),
            Some("default")
        );
        assert_eq!(config_value("X=1", "SELINUX"), None);
        assert_eq!(
            with_value(text, "SELINUX", "enforcing"),
            "# comment\nSELINUX=enforcing\nSELINUXTYPE= default \n"
        );
        assert_eq!(
            with_value("# only\n", "SELINUXTYPE", "targeted"),
            "# only\nSELINUXTYPE=targeted\n"
        );
    }
}
