//! `timezone`: `/etc/localtime` links to the zone.

use std::path::Path;

use planner::modules::timezone::TimezoneParams;
use serde_json::Value as Json;

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::hostconf::{text, whole_file};

/// `timezone`: `/etc/localtime` links to the zone, `/etc/timezone` names it where it exists.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: TimezoneParams = params(planner::modules::timezone::SPEC.name, args)?;
    let name = p.name.as_ref().map(text).unwrap_or("UTC").trim().to_owned();
    if name.split('/').any(|c| c == ".." || c.is_empty()) {
        return Err(ModuleError::new(format!(
            "'{name}' is not a time zone name"
        )));
    }
    let fs = ctx.target.fs();
    let zone = format!("/usr/share/zoneinfo/{name}");
    if !fs.exists(Path::new(&zone))? {
        return Err(ModuleError::new(format!(
            "{zone} is not in the image; install tzdata first, or check the zone's name"
        )));
    }
    let localtime = Path::new("/etc/localtime");
    let current = match fs.meta(localtime)? {
        Some(_) => fs.read_link(localtime).ok(),
        None => None,
    };
    let mut changed = false;
    if current.as_deref() != Some(zone.as_str()) {
        changed = true;
        if !ctx.check {
            fs.remove_all(localtime)?;
            fs.symlink(&zone, localtime)?;
        }
    }
    if fs.exists(Path::new("/etc/timezone"))? {
        changed |= whole_file(ctx, Path::new("/etc/timezone"), Some(&format!("{name}\n")))?;
    }
    Ok(ModuleResult::changed(changed).with("name", name))
}
