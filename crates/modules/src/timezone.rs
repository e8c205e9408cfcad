//! `timezone` (`community.general.timezone`): `/etc/localtime` (and `/etc/timezone`) of the image;
//! the hardware clock belongs to the node, not the build.
//!
//! `/etc/localtime` links to the zone.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::hostconf::{text, whole_file};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::Text;
use serde_json::Value as Json;
use std::path::Path;

/// Parameters of `timezone`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TimezoneParams {
    /// The zone (`Europe/Berlin`, `UTC`).
    pub name: Option<Text>,
    /// Accepted; the node's hardware clock is not the image's.
    pub hwclock: Option<Text>,
}

impl Params for TimezoneParams {
    fn check(&self) -> Result<(), String> {
        if self.name.is_none() {
            return Err("timezone needs name (hwclock alone has no meaning in an image)".into());
        }
        Ok(())
    }
}

/// `timezone`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "timezone",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<TimezoneParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `timezone`: `/etc/localtime` links to the zone, `/etc/timezone` names it where it exists.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: TimezoneParams = params(SPEC.name, args)?;
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
    // The zone before, as Ansible's module reports it in `diff` (its name, or "n/a").
    let before = match fs.read_text_opt(Path::new("/etc/timezone"))? {
        Some(text) if !text.trim().is_empty() => text.trim().to_owned(),
        _ => current
            .as_deref()
            .and_then(|link| link.split_once("zoneinfo/"))
            .map_or_else(|| "n/a".to_owned(), |(_, zone)| zone.to_owned()),
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
    let diff = serde_json::json!({"before": {"name": before}, "after": {"name": name}});
    Ok(ModuleResult::changed(changed)
        .with("name", name)
        .with("diff", diff)
        .with("msg", ""))
}
