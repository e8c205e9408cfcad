//! `include_vars`: variables from a YAML file of the role (`vars/`), read at plan time. With
//! `with_first_found` (or `first_found` in `file`), the first of several fact-named files that
//! exists is read (`{{ ansible_distribution }}-{{ ansible_distribution_major_version }}.yml`,
//! `{{ ansible_os_family }}.yml`, `default.yml`).

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Text, TextList};

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
    /// With `dir`: how many folders of its sorted walk to read (0: all).
    pub depth: Option<Text>,
    /// With `dir`: a regular expression a file's name must contain.
    pub files_matching: Option<Text>,
    /// With `dir`: regular expressions a file's name must not end with.
    pub ignore_files: Option<TextList>,
    /// With `dir`: the extensions of var files (default yaml, yml, json).
    pub extensions: Option<TextList>,
    /// With `dir`: leave out files without one of `extensions` instead of failing.
    pub ignore_unknown_extensions: Option<Flag>,
    /// `merge` mappings into the variables' values so far, or `replace` them (the default).
    pub hash_behaviour: Option<Text>,
}

impl Params for IncludeVarsParams {
    fn check(&self) -> Result<(), String> {
        // Ansible's words for each case.
        match (&self.file, &self.dir) {
            (None, None) => Err(
                "Could not find file: include_vars names no file (give it file: or dir:)".into(),
            ),
            (Some(_), Some(_)) => Err(
                "You are mixing file only and dir only arguments, these are incompatible".into(),
            ),
            _ => Ok(()),
        }
    }
}

/// `include_vars`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "include_vars",
    aliases: &[],
    free_form: FreeForm::Command(&[]),
    url_params: &[],
    normalize: super::spec::normalize_with::<IncludeVarsParams>,
    plan_time: PlanTime::IncludeVars,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
