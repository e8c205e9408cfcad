//! `kernel_blacklist`: `blacklist <module>` in a modprobe.d file.

use std::path::Path;

use planner::modules::kernel_blacklist::{BlacklistState, KernelBlacklistParams};
use planner::modules::types::Choice;
use serde_json::Value as Json;

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::hostconf::{set_line, text, words, ensure_parent};

/// `kernel_blacklist`: `blacklist <module>` in a modprobe.d file.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: KernelBlacklistParams = params(planner::modules::kernel_blacklist::SPEC.name, args)?;
    let name = text(&p.name).trim().to_owned();
    let file = p
        .blacklist_file
        .as_ref()
        .map_or("/etc/modprobe.d/blacklist.conf", text);
    let line = format!("blacklist {name}");
    let absent = matches!(p.state, Some(Choice::Known(BlacklistState::Absent)));
    ensure_parent(ctx, Path::new(file))?;
    set_line(
        ctx,
        Path::new(file),
        |l| words(l) == ["blacklist", name.as_str()],
        (!absent).then_some(line.as_str()),
    )
}
