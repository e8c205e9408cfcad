//! Modules made for a running host that have no meaning in an image build: `pause`, `reboot`,
//! `wait_for` and `wait_for_connection` are skipped with a visible note (the node reboots when
//! Warewulf boots it), and `setup`/`gather_facts` return the facts the plan already has (taken
//! from the recipe and checked against the rootfs).

use serde_json::Value as Json;

use super::{FreeForm, ModuleSpec, Runs};

/// Any arguments: none of them has an effect in an image build.
fn any(args: Json) -> Result<Json, String> {
    match args {
        Json::Object(_) | Json::Null => Ok(args),
        Json::String(s) => Ok(serde_json::json!({ "cmd": s })),
        other => Err(format!(
            "takes a mapping, not {}",
            super::types::json_type(&other)
        )),
    }
}

/// `pause`.
pub static PAUSE: ModuleSpec = ModuleSpec {
    name: "pause",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    runs: Runs::Controller,
    url_params: &[],
    normalize: any,
};
/// `reboot`.
pub static REBOOT: ModuleSpec = ModuleSpec {
    name: "reboot",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    runs: Runs::Controller,
    url_params: &[],
    normalize: any,
};
/// `wait_for`.
pub static WAIT_FOR: ModuleSpec = ModuleSpec {
    name: "wait_for",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    runs: Runs::Controller,
    url_params: &[],
    normalize: any,
};
/// `wait_for_connection`.
pub static WAIT_FOR_CONNECTION: ModuleSpec = ModuleSpec {
    name: "wait_for_connection",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    runs: Runs::Controller,
    url_params: &[],
    normalize: any,
};
/// `setup` (and `gather_facts`).
pub static SETUP: ModuleSpec = ModuleSpec {
    name: "setup",
    aliases: &["gather_facts"],
    free_form: FreeForm::KeyValue,
    runs: Runs::Controller,
    url_params: &[],
    normalize: any,
};

/// Whether a module is one of these.
pub fn is_host_only(name: &str) -> bool {
    matches!(
        name,
        "pause" | "reboot" | "wait_for" | "wait_for_connection"
    )
}
