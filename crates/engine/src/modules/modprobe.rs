//! `modprobe`: a module loaded at boot (modules-load.d) and its options (modprobe.d); nothing
//! is loaded now.

use std::path::Path;

use planner::modules::modprobe::{ModprobeParams, ModprobeState, Persistence};
use planner::modules::types::Choice;
use serde_json::Value as Json;

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::hostconf::{text, whole_file};

/// `modprobe`: boot-time loading and options; loading now is skipped with a note.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: ModprobeParams = params(planner::modules::modprobe::SPEC.name, args)?;
    let name = text(&p.name).trim();
    let load = Path::new("/etc/modules-load.d").join(format!("{name}.conf"));
    let options = Path::new("/etc/modprobe.d").join(format!("{name}.conf"));
    let mut changed = false;
    match &p.persistent {
        Some(Choice::Known(Persistence::Present)) => {
            changed |= whole_file(ctx, &load, Some(&format!("{name}\n")))?;
            let opts = p.params.as_ref().map(text).unwrap_or("").trim();
            if !opts.is_empty() {
                changed |= whole_file(ctx, &options, Some(&format!("options {name} {opts}\n")))?;
            }
        }
        Some(Choice::Known(Persistence::Absent)) => {
            changed |= whole_file(ctx, &load, None)?;
            changed |= whole_file(ctx, &options, None)?;
        }
        _ => {}
    }
    let verb = match &p.state {
        Some(Choice::Known(ModprobeState::Absent)) => "unloading",
        _ => "loading",
    };
    Ok(ModuleResult {
        changed,
        msg: Some(format!(
            "{verb} {name} skipped: an image build never loads a module into the build host's kernel{}",
            if matches!(p.persistent, Some(Choice::Known(Persistence::Present))) {
                " (the node loads it at boot from /etc/modules-load.d)"
            } else {
                ""
            }
        )),
        ..ModuleResult::default()
    })
}
