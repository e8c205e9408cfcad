//! `group`: a group in the rootfs, through its own groupadd/groupmod/groupdel.

use planner::modules::group::GroupParams;
use serde_json::Value as Json;

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::users::{absent, entry, int, run_argv};

/// `group`, with the result fields Ansible's group module returns.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: GroupParams = params(planner::modules::group::SPEC.name, args)?;
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
