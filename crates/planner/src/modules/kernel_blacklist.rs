//! `kernel_blacklist` (`community.general.kernel_blacklist`): a `blacklist <module>` line in a
//! modprobe.d file of the image.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Text};

crate::choices!(
    /// Blacklisted or not.
    BlacklistState { Present => "present", Absent => "absent" }
);

/// Parameters of `kernel_blacklist`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KernelBlacklistParams {
    /// The kernel module.
    pub name: Text,
    /// Present or absent.
    pub state: Option<Choice<BlacklistState>>,
    /// The file (default `/etc/modprobe.d/blacklist.conf`).
    pub blacklist_file: Option<Text>,
}

impl Params for KernelBlacklistParams {}

/// `kernel_blacklist`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "kernel_blacklist",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<KernelBlacklistParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
