//! `sysctl`: `name = value` in a sysctl.d file the node reads at boot; never applied to the
//! build host.

use std::path::Path;

use planner::modules::sysctl::{SysctlParams, SysctlState};
use planner::modules::types::Choice;
use serde_json::Value as Json;

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::hostconf::{set_line, text, ensure_parent};

/// `sysctl`: `name = value` in the sysctl file; never applied to the build host.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: SysctlParams = params(planner::modules::sysctl::SPEC.name, args)?;
    let name = text(&p.name).trim().to_owned();
    let file = p
        .sysctl_file
        .as_ref()
        .map_or("/etc/sysctl.d/99-imgbuild.conf", text);
    let matches = |l: &str| {
        l.split('#')
            .next()
            .unwrap_or("")
            .split('=')
            .next()
            .map(str::trim)
            == Some(name.as_str())
            && l.contains('=')
    };
    let absent = matches!(p.state, Some(Choice::Known(SysctlState::Absent)));
    let line = p
        .value
        .as_ref()
        .map(|v| format!("{name} = {}", text(v).trim()));
    ensure_parent(ctx, Path::new(file))?;
    let mut result = set_line(
        ctx,
        Path::new(file),
        matches,
        if absent { None } else { line.as_deref() },
    )?;
    result.msg = Some(format!(
        "written to {file}; not applied (the build host's kernel is not the image's: systemd-sysctl applies it at boot)"
    ));
    Ok(result)
}
