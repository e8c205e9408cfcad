//! `include_vars`: variables from a YAML file of the role (`vars/`), read at plan time. With
//! `with_first_found` (or `first_found` in `file`), the first of several fact-named files that
//! exists is read (`{{ ansible_distribution }}-{{ ansible_distribution_major_version }}.yml`,
//! `{{ ansible_os_family }}.yml`, `default.yml`).

use serde::{Deserialize, Serialize};

use super::types::Text;
use super::{FreeForm, ModuleSpec, Params, Runs};

/// Parameters of `include_vars`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IncludeVarsParams {
    /// The file (relative to the role's `vars/`, the role, or the task file's folder).
    #[serde(alias = "free_form", alias = "cmd")]
    pub file: Option<Text>,
    /// A folder of var files (read in name order).
    pub dir: Option<Text>,
    /// Put the variables under this name instead of at the top.
    pub name: Option<Text>,
}

impl Params for IncludeVarsParams {
    fn check(&self) -> Result<(), String> {
        super::exactly_one(
            "include_vars",
            &[("file", self.file.is_some()), ("dir", self.dir.is_some())],
        )
    }
}

/// `include_vars`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "include_vars",
    aliases: &[],
    free_form: FreeForm::Command(&[]),
    runs: Runs::Controller,
    url_params: &[],
    normalize: super::normalize_with::<IncludeVarsParams>,
};
