//! `group`: groups in the rootfs's group file.
//!
//! A group in the rootfs, through its own groupadd/groupmod/groupdel.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::lineinfile::LineState;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Int, Text};
use super::users::{absent, entry, int, run_argv};
use serde_json::Value as Json;

/// Parameters of `group`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupParams {
    /// Group name.
    pub name: Text,
    /// Present or absent.
    pub state: Option<Choice<LineState>>,
    /// Group id.
    pub gid: Option<Int>,
    /// A system group.
    pub system: Option<Flag>,
    /// Allow a non-unique gid.
    pub non_unique: Option<Flag>,
    /// Use local files only.
    pub local: Option<Flag>,
    /// Remove even when it is a user's primary group.
    pub force: Option<Flag>,
    /// Lowest gid to pick from.
    pub gid_min: Option<Int>,
    /// Highest gid to pick from.
    pub gid_max: Option<Int>,
}

impl Params for GroupParams {}

/// `group`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "group",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<GroupParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `group`, with the result fields Ansible's group module returns.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: GroupParams = params(SPEC.name, args)?;
    let mut result = group_apply(&p, ctx)?;
    let present = !absent(&p.state);
    let fields = &mut result.fields;
    fields.insert(
        "state".into(),
        Json::from(if present { "present" } else { "absent" }),
    );
    if let Some(info) = entry(ctx, "/etc/group", p.name.as_str())? {
        fields.insert("system".into(), Json::from(flag(&p.system, false)));
        fields.insert(
            "gid".into(),
            Json::from(info.get(2).and_then(|g| g.parse::<u64>().ok())),
        );
    }
    Ok(result)
}

fn group_apply(p: &GroupParams, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let name = p.name.to_string();
    let current = entry(ctx, "/etc/group", &name)?;
    let gid = int(&p.gid)?;
    let mut argv: Vec<String> = Vec::new();
    if absent(&p.state) {
        if current.is_some() {
            argv = vec!["groupdel".into(), name.clone()];
        }
    } else if current.is_none() {
        argv = vec!["groupadd".into()];
        if let Some(gid) = gid {
            argv.extend(["-g".into(), gid.to_string()]);
        }
        if flag(&p.system, false) {
            argv.push("-r".into());
        }
        if flag(&p.non_unique, false) {
            argv.push("-o".into());
        }
        argv.push(name.clone());
    } else if let (Some(gid), Some(fields)) = (gid, &current) {
        if fields.get(2).map(String::as_str) != Some(gid.to_string().as_str()) {
            argv = vec![
                "groupmod".into(),
                "-g".into(),
                gid.to_string(),
                name.clone(),
            ];
        }
    }
    if argv.is_empty() {
        return Ok(ModuleResult::changed(false).with("name", name));
    }
    if !ctx.check {
        run_argv(ctx, argv)?;
    }
    Ok(ModuleResult::changed(true).with("name", name))
}
