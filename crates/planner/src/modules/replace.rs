//! `replace`: every match of a regular expression in a file of the image replaced.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Mode, Text};

/// Parameters of `replace`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaceParams {
    /// The file.
    #[serde(alias = "dest", alias = "destfile", alias = "name")]
    pub path: Text,
    /// The regular expression (Python syntax, multiline mode).
    pub regexp: Text,
    /// The replacement (`\1`, `\g<name>` backreferences); empty removes the matches.
    pub replace: Option<Text>,
    /// Only after the first match of this expression.
    pub after: Option<Text>,
    /// Only before the first match of this expression.
    pub before: Option<Text>,
    /// Mode.
    pub mode: Option<Mode>,
    /// Owner.
    pub owner: Option<Text>,
    /// Group.
    pub group: Option<Text>,
    /// Accepted.
    pub backup: Option<Flag>,
    /// Accepted.
    pub encoding: Option<Text>,
    /// Command validating the new file.
    pub validate: Option<Text>,
    /// Extended attributes (`chattr` letters; accepted, not applied in an image build).
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for ReplaceParams {
    fn check(&self) -> Result<(), String> {
        super::spec::check_regex("regexp", self.regexp.as_str())?;
        for (name, pattern) in [("after", &self.after), ("before", &self.before)] {
            if let Some(pattern) = pattern.as_ref().map(|p| p.as_str()) {
                super::spec::check_regex(name, pattern)?;
            }
        }
        Ok(())
    }
}

/// `replace`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "replace",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<ReplaceParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};
