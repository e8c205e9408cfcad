//! `alternatives` (`community.general.alternatives`): the image's alternatives system, by its
//! own `update-alternatives` (Debian and Ubuntu; `alternatives` on EL is the same program), as
//! the module drives it: install the alternative, select it, or set the group back to auto.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Int, Text};

crate::choices!(
    /// What the alternative becomes.
    AlternativeState {
        Present => "present",
        Selected => "selected",
        Auto => "auto",
        Absent => "absent",
    }
);

/// A link that follows the alternative (`update-alternatives --slave`).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Subcommand {
    /// The follower's name in the group (`keytool`).
    pub name: Text,
    /// Its target (`/usr/lib/jvm/.../bin/keytool`).
    pub path: Text,
    /// Its generic link (`/usr/bin/keytool`).
    pub link: Text,
}

/// Parameters of `alternatives`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AlternativesParams {
    /// The group (`java`, `python3`, `mpi`).
    pub name: Text,
    /// The alternative's target, which must exist in the image.
    pub path: Text,
    /// The generic link (`/usr/bin/java`); needed only to install a group the image lacks.
    pub link: Option<Text>,
    /// The alternative's priority (50, or the one it has, unless given).
    pub priority: Option<Int>,
    /// `selected` (the default), `present`, `auto` or `absent`.
    pub state: Option<Choice<AlternativeState>>,
    /// Links that follow the alternative.
    #[serde(alias = "slaves")]
    pub subcommands: Option<Vec<Subcommand>>,
}

impl Params for AlternativesParams {}

/// `alternatives`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "alternatives",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<AlternativesParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::SPEC;

    #[test]
    fn takes_ansibles_options_and_defaults_nothing() {
        let args = json!({"name": "mpi", "path": "/usr/bin/mpicc.openmpi", "slaves": [
            {"name": "mpic++", "path": "/usr/bin/mpic++.openmpi", "link": "/usr/bin/mpic++"}
        ], "priority": "40"});
        let out = (SPEC.normalize)(args).expect("valid");
        assert_eq!(out["subcommands"][0]["name"], json!("mpic++"));
        assert_eq!(out["priority"], json!(40));
        assert!(out.get("state").is_none());
    }

    #[test]
    fn refuses_an_unknown_state_and_a_missing_path() {
        let err = (SPEC.normalize)(json!({"name": "java", "path": "/x", "state": "on"}))
            .expect_err("bad state");
        assert!(err.contains("selected"), "{err}");
        let err = (SPEC.normalize)(json!({"name": "java"})).expect_err("no path");
        assert_eq!(err, "missing required arguments: path");
    }
}
