//! `service`: the generic service module; in a rootfs it enables or disables systemd units.
//!
//! A unit enabled or disabled offline, as `systemd` does it (`systemd.rs`), and its
//! state as the image holds it.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::systemd::ServiceState;
use super::systemd::{set_enabled, state_in_image, unit_dirs};
use super::types::{Choice, Flag, Int, Text};
use serde_json::Value as Json;

/// Parameters of `service`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceParams {
    /// Service name.
    pub name: Text,
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
}

impl Params for ServiceParams {
    fn check(&self) -> Result<(), String> {
        if self.enabled.is_none() && self.state.is_none() {
            return Err("say what to do with the service: enabled or state".into());
        }
        Ok(())
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
    let mut changed = false;
    if let Some(enabled) = &p.enabled {
        changed = set_enabled(
            ctx.target.fs(),
            &unit_dirs(ctx),
            p.name.as_str(),
            enabled.or(false),
            ctx.check,
            &mut Vec::new(),
        )?;
    }
    let mut result = state_in_image(ctx, p.name.as_str(), &p.state)?.unwrap_or_default();
    result.changed = changed;
    result = result.with("name", p.name.to_string());
    // As Ansible's service module returns it.
    if let Some(enabled) = &p.enabled {
        result = result.with("enabled", enabled.or(false));
    }
    Ok(result)
}
