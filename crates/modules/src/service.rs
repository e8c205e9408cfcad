//! `service`: the generic service module; in a rootfs it enables or disables systemd units.
//!
//! Ansible's `service` action runs the module of the host's service manager; in an image
//! that is systemd (`ansible_service_mgr`), so `service` runs `systemd` (`systemd.rs`) with
//! the options systemd does not take dropped, each with Ansible's warning. With `use:` naming
//! another manager, a unit is enabled or disabled offline the same way.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::systemd::{set_enabled, state_in_image, unit_dirs};
use super::systemd::{ServiceState, SystemdParams, SystemdScope};
use super::types::{Choice, Flag, Int, Text};
use serde_json::Value as Json;

/// Parameters of `service`: the service module's own, and the `systemd` module's, which
/// Ansible's `service` action hands on to `systemd` where systemd is the service manager (as
/// `ansible_service_mgr` says it is in every image imgbuild builds).
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceParams {
    /// Service name (the `systemd` module can do without one, for `daemon_reload`).
    pub name: Option<Text>,
    /// Enable at boot.
    pub enabled: Option<Flag>,
    /// Runtime state (refused in an image build).
    pub state: Option<Choice<ServiceState>>,
    /// Arguments for the init script.
    #[serde(alias = "args")]
    pub arguments: Option<Text>,
    /// Process pattern for status.
    pub pattern: Option<Text>,
    /// Runlevel (sysv).
    pub runlevel: Option<Text>,
    /// Seconds between stop and start.
    pub sleep: Option<Int>,
    /// Force a service manager.
    #[serde(rename = "use")]
    pub use_: Option<Text>,
    /// systemd's: mask the unit.
    pub masked: Option<Flag>,
    /// systemd's: reload unit files.
    #[serde(alias = "daemon-reload")]
    pub daemon_reload: Option<Flag>,
    /// systemd's: re-execute systemd.
    #[serde(alias = "daemon-reexec")]
    pub daemon_reexec: Option<Flag>,
    /// systemd's: system, user or global units.
    pub scope: Option<Choice<SystemdScope>>,
    /// systemd's: do not wait for the job.
    pub no_block: Option<Flag>,
    /// systemd's: replace existing links.
    pub force: Option<Flag>,
}

/// The module Ansible's `service` action runs for a task.
#[derive(Debug, PartialEq, Eq)]
enum Backend<'a> {
    /// `systemd`: `use` left out or `auto` (the image's service manager), or `systemd`.
    Systemd,
    /// Another module `use` names (`sysvinit`, `service`, ...).
    Other(&'a str),
    /// `use` is a template the build renders.
    Deferred,
}

impl ServiceParams {
    fn backend(&self) -> Backend<'_> {
        match self.use_.as_ref().map(Text::as_str) {
            None | Some("auto" | "systemd") => Backend::Systemd,
            Some(t) if ansible::template::is_template(t) => Backend::Deferred,
            Some(other) => Backend::Other(other),
        }
    }

    /// The options only the `systemd` module takes, given.
    fn systemd_only(&self) -> Vec<&'static str> {
        let given = [
            ("masked", self.masked.is_some()),
            ("daemon_reload", self.daemon_reload.is_some()),
            ("daemon_reexec", self.daemon_reexec.is_some()),
            ("scope", self.scope.is_some()),
            ("no_block", self.no_block.is_some()),
            ("force", self.force.is_some()),
        ];
        given.iter().filter(|g| g.1).map(|g| g.0).collect()
    }

    /// The options Ansible's action drops before it runs `systemd`, given (it warns of each).
    fn unused_by_systemd(&self) -> Vec<&'static str> {
        let given = [
            ("pattern", self.pattern.is_some()),
            ("runlevel", self.runlevel.is_some()),
            ("sleep", self.sleep.is_some()),
            ("arguments", self.arguments.is_some()),
        ];
        given.iter().filter(|g| g.1).map(|g| g.0).collect()
    }

    /// The arguments the `systemd` module gets.
    fn for_systemd(&self) -> SystemdParams {
        SystemdParams {
            name: self.name.clone(),
            enabled: self.enabled.clone(),
            masked: self.masked.clone(),
            state: self.state.clone(),
            daemon_reload: self.daemon_reload.clone(),
            daemon_reexec: self.daemon_reexec.clone(),
            scope: self.scope.clone(),
            no_block: self.no_block.clone(),
            force: self.force.clone(),
        }
    }
}

impl Params for ServiceParams {
    fn check(&self) -> Result<(), String> {
        match self.backend() {
            Backend::Systemd => self.for_systemd().check(),
            Backend::Deferred => Ok(()),
            Backend::Other(module) => {
                if let Some(option) = self.systemd_only().first() {
                    return Err(format!("`{option}` is the systemd module's; with use: {module}, Ansible's service action runs the {module} module, which does not take it"));
                }
                if self.name.is_none() {
                    return Err("missing required arguments: name".into());
                }
                if self.enabled.is_none() && self.state.is_none() {
                    return Err("say what to do with the service: enabled or state".into());
                }
                Ok(())
            }
        }
    }
}

/// `service`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "service",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<ServiceParams>,
    plan_time: PlanTime::ManagesServices,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `service`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: ServiceParams = params(SPEC.name, args)?;
    p.check()
        .map_err(|e| ModuleError::new(format!("{}: {e}", SPEC.name)))?;
    if p.backend() == Backend::Systemd {
        return run_systemd(&p, ctx);
    }
    let name = p.name.as_ref().map(Text::as_str).unwrap_or_default();
    let mut changed = false;
    if let Some(enabled) = &p.enabled {
        changed = set_enabled(
            ctx.target.fs(),
            &unit_dirs(ctx),
            name,
            enabled.or(false),
            ctx.check,
            &mut Vec::new(),
        )?;
    }
    let mut result = state_in_image(ctx, name, &p.state)?.unwrap_or_default();
    result.changed = changed;
    result = result.with("name", name);
    // As Ansible's service module returns it.
    if let Some(enabled) = &p.enabled {
        result = result.with("enabled", enabled.or(false));
    }
    Ok(result)
}

/// What Ansible's `service` action does where systemd is the service manager: the `systemd`
/// module, without the options it does not take, a warning for each.
fn run_systemd(p: &ServiceParams, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let mut result = super::systemd::run_params(&p.for_systemd(), ctx)?;
    let warnings: Vec<Json> = p
        .unused_by_systemd()
        .into_iter()
        .map(|option| Json::from(format!("Ignoring \"{option}\" as it is not used in \"systemd\"")))
        .collect();
    if !warnings.is_empty() {
        result = result.with("warnings", warnings);
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::normalize_with;
    use serde_json::json;

    fn checked(args: Json) -> Result<Json, String> {
        normalize_with::<ServiceParams>(args)
    }

    #[test]
    fn systemds_options_pass_where_ansibles_action_runs_systemd() {
        let written = json!({"name": "cron", "state": "restarted", "daemon-reload": true});
        let args = checked(written.clone()).expect("systemd takes daemon-reload");
        assert_eq!(args["daemon_reload"], json!(true));
        let mut auto = written.clone();
        auto["use"] = json!("auto");
        assert!(checked(auto).is_ok());
        let mut sysv = written;
        sysv["use"] = json!("sysvinit");
        let refused = checked(sysv).expect_err("sysvinit does not take daemon-reload");
        assert!(refused.contains("daemon_reload"), "{refused}");
    }

    #[test]
    fn a_name_is_needed_as_the_module_that_runs_needs_it() {
        assert!(checked(json!({"daemon_reload": true})).is_ok());
        assert!(checked(json!({"state": "started"})).is_err());
        // A status query: the systemd module takes a name alone; the service module does not.
        assert!(checked(json!({"name": "cron"})).is_ok());
        assert!(checked(json!({"name": "cron", "use": "service"})).is_err());
        assert!(checked(json!({"use": "sysvinit", "enabled": true})).is_err());
        assert!(checked(json!({"use": "{{ mgr }}", "masked": true})).is_ok());
    }

    #[test]
    fn what_systemd_does_not_take_is_dropped_with_a_warning_each() {
        let p: ServiceParams = serde_json::from_value(json!({
            "name": "cron", "enabled": true, "args": "-x", "pattern": "cron", "sleep": 2
        }))
        .expect("params");
        assert_eq!(p.unused_by_systemd(), ["pattern", "sleep", "arguments"]);
        let systemd = serde_json::to_value(p.for_systemd()).expect("json");
        assert_eq!(systemd, json!({"name": "cron", "enabled": true}));
    }
}
