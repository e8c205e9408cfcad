//! `pam_limits` (`community.general.pam_limits`): one limit line in limits.conf of the image
//! (`* - memlock unlimited` is the classic for RDMA).

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text};

crate::choices!(
    /// Soft, hard or both.
    LimitType { Hard => "hard", Soft => "soft", Both => "-" }
);

/// Parameters of `pam_limits`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PamLimitsParams {
    /// User, `@group` or `*`.
    pub domain: Text,
    /// `hard`, `soft` or `-`.
    pub limit_type: Choice<LimitType>,
    /// `memlock`, `nofile`, `stack`, ...
    pub limit_item: Text,
    /// The value (`unlimited`, a number).
    pub value: Text,
    /// The file (default `/etc/security/limits.conf`).
    pub dest: Option<Text>,
    /// A comment at the end of the line.
    pub comment: Option<Text>,
    /// Keep the lower value when one is set (accepted, ignored: the recipe's value wins).
    pub use_min: Option<Flag>,
    /// Keep the higher value when one is set (accepted, ignored: the recipe's value wins).
    pub use_max: Option<Flag>,
    /// Accepted.
    pub backup: Option<Flag>,
}

impl Params for PamLimitsParams {}

/// `pam_limits`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "pam_limits",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<PamLimitsParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
