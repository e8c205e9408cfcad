//! `service`: a unit enabled or disabled offline, as `systemd` does it (`systemd.rs`), and its
//! state as the image holds it.

use planner::modules::service::ServiceParams;
use serde_json::Value as Json;

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::systemd::{unit_dirs, set_enabled, state_in_image};

/// `service`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: ServiceParams = params(planner::modules::service::SPEC.name, args)?;
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
