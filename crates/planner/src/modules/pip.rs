//! `pip`: Python packages installed in the image by its own pip, system-wide or in a
//! virtualenv the module creates, from the index the task's `extra_args`, its environment or
//! the image's pip configuration names.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text, TextList};

crate::choices!(
    /// What to do with the packages.
    PipState {
        Present => "present",
        Absent => "absent",
        Latest => "latest",
        ForceReinstall => "forcereinstall",
    }
);

/// Parameters of `pip`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PipParams {
    /// Requirement specifiers (`name`, `name>=1.0`), a VCS URL or a path.
    pub name: Option<TextList>,
    /// The version of the one package named.
    pub version: Option<Text>,
    /// A requirements file in the image.
    pub requirements: Option<Text>,
    /// present (default), absent, latest, forcereinstall.
    pub state: Option<Choice<PipState>>,
    /// A virtualenv in the image, created if missing.
    pub virtualenv: Option<Text>,
    /// Give the new virtualenv the system's packages.
    pub virtualenv_site_packages: Option<Flag>,
    /// What creates the virtualenv (default `virtualenv`; `python3 -m venv`).
    pub virtualenv_command: Option<Text>,
    /// The Python the virtualenv uses (not with venv).
    pub virtualenv_python: Option<Text>,
    /// More pip arguments (`--index-url ...`).
    pub extra_args: Option<Text>,
    /// Install in editable mode (`-e`).
    pub editable: Option<Flag>,
    /// The folder pip runs in (default the temporary folder).
    pub chdir: Option<Text>,
    /// The pip to run (not with a virtualenv).
    pub executable: Option<Text>,
    /// The umask pip runs with (octal).
    pub umask: Option<Text>,
}

impl Params for PipParams {
    fn check(&self) -> Result<(), String> {
        match (&self.name, &self.requirements) {
            (None, None) => {
                return Err("one of the following is required: name, requirements".into())
            }
            (Some(_), Some(_)) => {
                return Err("parameters are mutually exclusive: name|requirements".into())
            }
            _ => {}
        }
        if self.executable.is_some() && self.virtualenv.is_some() {
            return Err("parameters are mutually exclusive: executable|virtualenv".into());
        }
        Ok(())
    }
}

/// `pip`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "pip",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<PipParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
