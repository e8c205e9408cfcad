//! `timezone` (`community.general.timezone`): `/etc/localtime` (and `/etc/timezone`) of the image;
//! the hardware clock belongs to the node, not the build.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::Text;

/// Parameters of `timezone`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TimezoneParams {
    /// The zone (`Europe/Berlin`, `UTC`).
    pub name: Option<Text>,
    /// Accepted; the node's hardware clock is not the image's.
    pub hwclock: Option<Text>,
}

impl Params for TimezoneParams {
    fn check(&self) -> Result<(), String> {
        if self.name.is_none() {
            return Err("timezone needs name (hwclock alone has no meaning in an image)".into());
        }
        Ok(())
    }
}

/// `timezone`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "timezone",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<TimezoneParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
