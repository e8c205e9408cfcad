//! `async_status`: what a job started with `async` and `poll: 0` gave. An image build runs
//! such a task to its end before the next one starts, so the job has always finished by the
//! time it is asked about; `mode: cleanup` forgets it.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::Text;

/// Parameters of `async_status`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AsyncStatusParams {
    /// The job's id (`ansible_job_id` of the task that started it).
    pub jid: Text,
    /// `status` (the default) or `cleanup`.
    pub mode: Option<Text>,
}

impl Params for AsyncStatusParams {
    fn check(&self) -> Result<(), String> {
        match self.mode.as_ref().map(Text::as_str) {
            None | Some("status") | Some("cleanup") => Ok(()),
            Some(other) => Err(format!(
                "value of mode must be one of: status, cleanup, got: {other}"
            )),
        }
    }
}

/// `async_status`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "async_status",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<AsyncStatusParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
