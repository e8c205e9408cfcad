//! `service_facts`: the image's systemd units and whether each is enabled, read from its unit
//! files (no service manager runs in a build), as `ansible_facts.services`.
//!
//! The units and whether each is enabled, from the unit files (no service
//! manager runs in a build).

use serde::{Deserialize, Serialize};

use super::api::{ModuleCtx, ModuleError, ModuleResult};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use serde_json::{json, Map, Value as Json};
use std::path::Path;

/// `service_facts` takes no parameters.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceFactsParams {}

impl Params for ServiceFactsParams {}

/// `service_facts`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "service_facts",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<ServiceFactsParams>,
    plan_time: PlanTime::FactsAtBuild(&["services"]),
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `service_facts`: every unit file of the image, `enabled` when a `.wants` link names it; its
/// state `inactive`, systemd's `ActiveState` of a unit nothing runs (what Ansible's module reads
/// with `systemctl show` for a unit file no running unit lists).
pub fn run(_args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    let mut services = Map::new();
    for dir in [
        "/usr/lib/systemd/system",
        "/lib/systemd/system",
        "/etc/systemd/system",
    ] {
        let Ok(names) = fs.list(Path::new(dir)) else {
            continue;
        };
        for name in names {
            if name.ends_with(".service") && !name.contains('@') {
                services.entry(name.clone()).or_insert_with(|| {
                    json!({"name": name, "source": "systemd", "state": "inactive", "status": "disabled"})
                });
            }
        }
    }
    // Enabled: a link in some *.wants folder of /etc/systemd/system.
    if let Ok(dirs) = fs.list(Path::new("/etc/systemd/system")) {
        for wants in dirs.iter().filter(|d| d.ends_with(".wants")) {
            let folder = Path::new("/etc/systemd/system").join(wants);
            for name in fs.list(&folder).unwrap_or_default() {
                if let Some(entry) = services.get_mut(&name) {
                    entry["status"] = json!("enabled");
                }
            }
        }
    }
    for (name, entry) in services.iter_mut() {
        let masked = fs
            .read_link(&Path::new("/etc/systemd/system").join(name))
            .is_ok_and(|t| t == "/dev/null");
        if masked {
            entry["status"] = json!("masked");
        }
    }
    let services = Json::Object(services);
    Ok(ModuleResult::changed(false).with("ansible_facts", json!({ "services": services })))
}
