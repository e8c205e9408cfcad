//! `lineinfile`: make sure one line is (or is not) in a file of the rootfs.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Mode, Text};

crate::choices!(
    /// Whether the line should be there.
    LineState { Present => "present", Absent => "absent" }
);

/// Parameters of `lineinfile`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LineinfileParams {
    /// The file in the rootfs.
    #[serde(alias = "dest", alias = "destfile", alias = "name")]
    pub path: Text,
    /// The line.
    #[serde(alias = "value")]
    pub line: Option<Text>,
    /// Regular expression of the line to replace or remove.
    #[serde(alias = "regex")]
    pub regexp: Option<Text>,
    /// Literal text of the line to replace or remove.
    pub search_string: Option<Text>,
    /// Present or absent.
    pub state: Option<Choice<LineState>>,
    /// Insert after the last line matching this (or `EOF`).
    pub insertafter: Option<Text>,
    /// Insert before the last line matching this (or `BOF`).
    pub insertbefore: Option<Text>,
    /// Use backreferences of `regexp` in `line`; do nothing when it does not match.
    pub backrefs: Option<Flag>,
    /// Anchor at the first match of insertafter/insertbefore.
    pub firstmatch: Option<Flag>,
    /// Create the file if missing.
    pub create: Option<Flag>,
    /// Keep a timestamped backup.
    pub backup: Option<Flag>,
    /// Mode.
    pub mode: Option<Mode>,
    /// Owner name or uid.
    pub owner: Option<Text>,
    /// Group name or gid.
    pub group: Option<Text>,
    /// Command to validate the file before it is put in place.
    pub validate: Option<Text>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
    /// Extended attributes.
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for LineinfileParams {
    fn check(&self) -> Result<(), String> {
        let absent = matches!(self.state, Some(Choice::Known(LineState::Absent)));
        if !absent && self.line.is_none() {
            return Err("state=present needs line".into());
        }
        if self.insertafter.is_some() && self.insertbefore.is_some() {
            return Err("use insertafter or insertbefore, not both".into());
        }
        if self.backrefs.as_ref().is_some_and(|b| b.or(false)) && self.regexp.is_none() {
            return Err("backrefs needs regexp".into());
        }
        for (name, pattern) in [
            ("regexp", &self.regexp),
            ("insertafter", &self.insertafter),
            ("insertbefore", &self.insertbefore),
        ] {
            if let Some(pattern) = pattern.as_ref().map(|p| p.as_str()) {
                check_python_regex(name, pattern)?;
            }
        }
        Ok(())
    }
}

/// [`super::check_regex`] for Python patterns with backreferences and look-around, which
/// lineinfile's `re.search` takes.
fn check_python_regex(name: &str, pattern: &str) -> Result<(), String> {
    if crate::template::is_template(pattern) {
        return Ok(());
    }
    fancy_regex::Regex::new(pattern).map(|_| ()).map_err(|e| {
        format!("{name} {pattern:?} is not a regular expression imgbuild can use: {e}")
    })
}

/// `lineinfile`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "lineinfile",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<LineinfileParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};
