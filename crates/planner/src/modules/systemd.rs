//! `systemd`: enable, disable or mask units offline, by writing the `.wants` links.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text};

crate::choices!(
    /// Runtime states; an image build refuses them (no daemon runs in a rootfs).
    ServiceState { Started => "started", Stopped => "stopped", Restarted => "restarted", Reloaded => "reloaded" }
);

crate::choices!(
    /// Unit scope.
    SystemdScope { System => "system", User => "user", Global => "global" }
);

/// Parameters of `systemd`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SystemdParams {
    /// Unit name (`.service` may be left out).
    #[serde(alias = "service", alias = "unit")]
    pub name: Option<Text>,
    /// Enable at boot.
    pub enabled: Option<Flag>,
    /// Mask the unit.
    pub masked: Option<Flag>,
    /// Runtime state (refused in an image build).
    pub state: Option<Choice<ServiceState>>,
    /// Reload unit files (a no-op offline).
    #[serde(alias = "daemon-reload")]
    pub daemon_reload: Option<Flag>,
    /// Re-execute systemd (a no-op offline).
    #[serde(alias = "daemon-reexec")]
    pub daemon_reexec: Option<Flag>,
    /// System, user or global units.
    pub scope: Option<Choice<SystemdScope>>,
    /// Do not wait for the job.
    pub no_block: Option<Flag>,
    /// Replace existing links.
    pub force: Option<Flag>,
}

impl Params for SystemdParams {
    fn check(&self) -> Result<(), String> {
        let acts = self.enabled.is_some() || self.masked.is_some() || self.state.is_some();
        if self.name.is_none() && acts {
            return Err("enabled, masked and state need name".into());
        }
        if self.name.is_some() && !acts {
            return Err("say what to do with the unit: enabled, masked or state".into());
        }
        if self.name.is_none() && self.daemon_reload.is_none() && self.daemon_reexec.is_none() {
            return Err("systemd needs name (or daemon_reload)".into());
        }
        Ok(())
    }
}

/// `systemd`, also `systemd_service`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "systemd",
    aliases: &["systemd_service"],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<SystemdParams>,
    plan_time: PlanTime::ManagesServices,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
