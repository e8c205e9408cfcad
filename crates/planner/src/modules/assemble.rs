//! `assemble`: one file made of a folder's fragments, in name order; the folder is in the image
//! (`remote_src`, the default) or the role's `files/`.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Mode, Text};

/// Parameters of `assemble`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AssembleParams {
    /// The folder of fragments.
    pub src: Text,
    /// The file made.
    pub dest: Text,
    /// Written between fragments (backslash escapes such as `\n` read as Python reads them).
    pub delimiter: Option<Text>,
    /// Only fragments whose names this regular expression finds something in.
    pub regexp: Option<Text>,
    /// Leave out fragments whose names start with a dot.
    pub ignore_hidden: Option<Flag>,
    /// `src` is a folder of the image (default yes); no: of the role's `files/`.
    pub remote_src: Option<Flag>,
    /// Decrypt vaulted fragments of the role (default yes).
    pub decrypt: Option<Flag>,
    /// Keep a timestamped copy of a file it replaces.
    pub backup: Option<Flag>,
    /// Command validating the new file (`%s` is the file).
    pub validate: Option<Text>,
    /// Mode of the file.
    pub mode: Option<Mode>,
    /// Owner name or uid.
    pub owner: Option<Text>,
    /// Group name or gid.
    pub group: Option<Text>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
}

impl Params for AssembleParams {
    fn check(&self) -> Result<(), String> {
        if let Some(regexp) = &self.regexp {
            super::spec::check_regex("regexp", regexp.as_str())?;
        }
        match &self.validate {
            // Ansible's words.
            Some(v) if !v.as_str().contains("%s") && !crate::template::is_template(v.as_str()) => {
                Err(format!("validate must contain %s: {v}"))
            }
            _ => Ok(()),
        }
    }
}

/// `assemble`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "assemble",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<AssembleParams>,
    plan_time: PlanTime::PushSourceWhenNotRemote,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validate_needs_the_file_and_regexp_compiles() {
        let ok = (SPEC.normalize)(json!({"src": "/a", "dest": "/b", "validate": "sh -n %s"}));
        assert!(ok.is_ok());
        let no_file = (SPEC.normalize)(json!({"src": "/a", "dest": "/b", "validate": "true"}));
        assert!(no_file.is_err_and(|e| e.starts_with("validate must contain %s")));
        let bad = (SPEC.normalize)(json!({"src": "/a", "dest": "/b", "regexp": "("}));
        assert!(bad.is_err());
    }
}
