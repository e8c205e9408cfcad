//! `assert`: stop the build unless every condition holds.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::Flag;

/// Parameters of `assert`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AssertParams {
    /// Conditions, as in `when:`.
    pub that: AssertConditions,
    /// Message when a condition fails.
    #[serde(alias = "msg")]
    pub fail_msg: Option<serde_json::Value>,
    /// Message when all hold.
    pub success_msg: Option<serde_json::Value>,
    /// Print less.
    pub quiet: Option<Flag>,
}

/// `that:` as one condition or a list (never split on commas: conditions contain them).
#[derive(Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum AssertConditions {
    /// Several conditions.
    Many(Vec<ConditionText>),
    /// One condition.
    One(ConditionText),
}

/// A condition written as text or a YAML boolean.
#[derive(Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum ConditionText {
    /// An expression.
    Expr(String),
    /// A literal boolean.
    Bool(bool),
}

impl Params for AssertParams {}

/// `assert`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "assert",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<AssertParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &["that"],
};
