//! Modules made for a running host that have no meaning in an image build: `pause`, `reboot`,
//! `wait_for` and `wait_for_connection` are skipped with a visible note (the node reboots when
//! Warewulf boots it), and `setup`/`gather_facts` return the facts the plan already has (taken
//! from the recipe and checked against the rootfs), and the image's local facts, which only the
//! build can read.

use serde_json::Value as Json;

use super::spec::{Downloads, FreeForm, ModuleSpec, PlanTime};

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
    url_params: &[],
    normalize: any,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
/// `reboot`.
pub static REBOOT: ModuleSpec = ModuleSpec {
    name: "reboot",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: any,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
/// `wait_for`.
pub static WAIT_FOR: ModuleSpec = ModuleSpec {
    name: "wait_for",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: any,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
/// `wait_for_connection`.
pub static WAIT_FOR_CONNECTION: ModuleSpec = ModuleSpec {
    name: "wait_for_connection",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: any,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
/// `setup` (and `gather_facts`).
pub static SETUP: ModuleSpec = ModuleSpec {
    name: "setup",
    aliases: &["gather_facts"],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: any,
    plan_time: PlanTime::GatherFacts,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

/// Whether a `setup` with these arguments gathers the image's local facts
/// (`/etc/ansible/facts.d`): always, unless its `filter` names facts and none of them matches
/// `ansible_local`.
pub fn gathers_local_facts(args: &Json) -> bool {
    let patterns: Vec<&str> = match args.get("filter") {
        None | Some(Json::Null) => return true,
        Some(Json::String(one)) => vec![one.as_str()],
        Some(Json::Array(many)) => many.iter().filter_map(Json::as_str).collect(),
        Some(_) => return true,
    };
    patterns.is_empty()
        || patterns
            .iter()
            .any(|p| ansible::glob::matches(p, "ansible_local"))
}

/// Whether a module is one of these.
pub fn is_host_only(name: &str) -> bool {
    matches!(
        name,
        "pause" | "reboot" | "wait_for" | "wait_for_connection"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn setup_gathers_local_facts_unless_its_filter_leaves_them_out() {
        assert!(gathers_local_facts(&json!({})));
        assert!(gathers_local_facts(&json!({"filter": "ansible_local"})));
        assert!(gathers_local_facts(&json!({"filter": ["ansible_lo*"]})));
        assert!(gathers_local_facts(&json!({"filter": []})));
        assert!(!gathers_local_facts(
            &json!({"filter": "ansible_distribution*"})
        ));
        assert!(!gathers_local_facts(
            &json!({"filter": ["ansible_env", "ansible_mounts"]})
        ));
    }
}
