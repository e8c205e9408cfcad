//! `service_facts`: the image's systemd units and whether each is enabled, read from its unit
//! files (no service manager runs in a build), as `ansible_facts.services`.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};

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
