//! The layer stages of an image, as its plan predicts them: the base, then one per role, each
//! keyed as the build keys its layer (`keys::role_inputs`), with the stage below in place of
//! the layers' digests. Two images whose stages have the same key build the same layer, so a
//! matrix can build each shared stage once and fan out from it (`imgbuild affected`). The
//! stage keys chain, as the build's keys do: the first role that differs parts two images for
//! good.

use std::path::Path;

use planner::Plan;
use serde_json::{json, Value as Json};

use super::keys::{role_inputs, steps_of};
use crate::base::{BaseError, BaseRequest};
use crate::hashing::digest_of;

/// One layer stage of an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    /// `base`, or the role whose layer this is.
    pub role: String,
    /// The stage's key: equal keys, the same layer.
    pub key: String,
}

/// The stages of `plan`, bottom first: its base's, then one per role. `pin` gives an
/// artifact's pinned sha256 (`mirror.lock`), as the build's layer keys hold it.
pub fn stages(
    plan: &Plan,
    project_root: &Path,
    pin: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Stage>, BaseError> {
    let base = BaseRequest::from_vars(&plan.vars)?;
    let base_key = digest_of(
        json!({
            "bootstrap": base.bootstrap.to_string(),
            "build_from": base.build_from,
            "debootstrap_mirror": base.debootstrap_mirror,
            "include": base.include,
            "dnf_repos": base.dnf_repos,
        })
        .to_string()
        .as_bytes(),
    );
    let mut out = vec![Stage {
        role: "base".into(),
        key: base_key,
    }];
    for role in &plan.roles {
        let steps = steps_of(plan, role);
        let below = out.last().map(|s| s.key.clone()).unwrap_or_default();
        // What earlier roles registered is the same for the same layers below (a layer taken
        // from the cache brings back what its role registered), so the stage below stands in.
        let inputs = role_inputs(plan, &steps, &below, project_root, &Json::Null, pin);
        out.push(Stage {
            role: role.clone(),
            key: inputs.key(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use planner::plan::{PlannedTask, Step};

    fn plan(roles: &[(&str, &str)], build_from: &str) -> Plan {
        let tasks = roles
            .iter()
            .map(|(role, command)| {
                Step::Task(Box::new(PlannedTask {
                    role: (*role).into(),
                    name: "run".into(),
                    module: "command".into(),
                    args: json!({ "cmd": command }),
                    ..PlannedTask::default()
                }))
            })
            .collect();
        let mut vars = indexmap::IndexMap::new();
        vars.insert("bootstrap".into(), json!("docker"));
        vars.insert("build_from".into(), json!(build_from));
        Plan {
            image: "i".into(),
            recipe: "images/i.yml".into(),
            intent: Default::default(),
            facts: Default::default(),
            vars,
            roles: roles.iter().map(|(r, _)| (*r).into()).collect(),
            tasks,
            handlers: Vec::new(),
            warnings: Vec::new(),
            missing_handlers: Vec::new(),
            inputs: Vec::new(),
        }
    }

    fn keys(plan: &Plan) -> Vec<String> {
        let none = |_: &str| None;
        stages(plan, Path::new("/nonexistent"), &none)
            .expect("stages")
            .into_iter()
            .map(|s| s.key)
            .collect()
    }

    #[test]
    fn images_share_stages_up_to_the_first_role_that_differs() {
        let a = keys(&plan(
            &[("common", "true"), ("mofed", "a"), ("site", "x")],
            "r:1",
        ));
        let b = keys(&plan(
            &[("common", "true"), ("mofed", "b"), ("site", "x")],
            "r:1",
        ));
        assert_eq!(a.len(), 4, "the base and three roles");
        assert_eq!(a[..2], b[..2], "the base and common are shared");
        assert_ne!(a[2], b[2], "mofed differs");
        assert_ne!(a[3], b[3], "site is the same role, over another layer");
    }

    #[test]
    fn another_base_shares_nothing() {
        let a = keys(&plan(&[("common", "true")], "r:1"));
        let b = keys(&plan(&[("common", "true")], "r:2"));
        assert!(a.iter().zip(&b).all(|(x, y)| x != y));
    }
}
