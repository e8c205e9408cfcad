//! `package_facts`: the packages installed in the image, as `ansible_facts.packages` (a list
//! of installed versions per name), read from its package database when the build runs.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, TextList};

crate::choices!(
    /// Which of the asked package managers answer.
    Strategy { First => "first", All => "all" }
);

/// Parameters of `package_facts`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PackageFactsParams {
    /// Package managers to ask (`auto`, `rpm`, `apt`); default `auto`.
    pub manager: Option<TextList>,
    /// `first` (default): the first that answers; `all`: every one.
    pub strategy: Option<Choice<Strategy>>,
}

impl Params for PackageFactsParams {
    fn check(&self) -> Result<(), String> {
        let known = ["auto", "rpm", "apt"];
        match self.manager.iter().flat_map(|m| m.0.iter()).find(|m| {
            !known.contains(&m.to_ascii_lowercase().as_str()) && !crate::template::is_template(m)
        }) {
            Some(other) => Err(format!(
                "manager '{other}' is not one imgbuild reads (an image is rpm or apt): write auto, rpm or apt"
            )),
            None => Ok(()),
        }
    }
}

/// `package_facts`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "package_facts",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<PackageFactsParams>,
    plan_time: PlanTime::FactsAtBuild(&["packages"]),
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
