//! `meta`: `flush_handlers` runs the handlers notified so far, `end_role` ends the role,
//! `end_play` ends the build's tasks (the layers so far are the image), `noop`,
//! `reset_connection`, `clear_facts`, `clear_host_errors` and `refresh_inventory` do nothing in
//! an image build.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::Choice;

crate::choices!(
    /// The meta actions.
    MetaAction { FlushHandlers => "flush_handlers", EndRole => "end_role", EndPlay => "end_play", EndHost => "end_host", EndBatch => "end_batch", Noop => "noop", ResetConnection => "reset_connection", ClearFacts => "clear_facts", ClearHostErrors => "clear_host_errors", RefreshInventory => "refresh_inventory" }
);

/// Parameters of `meta` (its free-form word).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MetaParams {
    /// The action.
    #[serde(alias = "free_form")]
    pub cmd: Choice<MetaAction>,
}

impl Params for MetaParams {}

/// `meta`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "meta",
    aliases: &[],
    free_form: FreeForm::Command(&[]),
    url_params: &[],
    normalize: super::spec::normalize_with::<MetaParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
