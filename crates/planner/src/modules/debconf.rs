//! `debconf`: the image's debconf answers of a package, read with `debconf-show` and set with
//! `debconf-set-selections`, as Ansible's module does on its host.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text};

crate::choices!(
    /// The type of a debconf question's answer.
    DebconfType {
        Boolean => "boolean",
        Error => "error",
        Multiselect => "multiselect",
        Note => "note",
        Password => "password",
        Seen => "seen",
        Select => "select",
        String => "string",
        Text => "text",
        Title => "title",
    }
);

/// Parameters of `debconf`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DebconfParams {
    /// The package whose questions these are.
    #[serde(alias = "pkg")]
    pub name: Text,
    /// The question to answer (`tzdata/Areas`).
    #[serde(alias = "selection", alias = "setting")]
    pub question: Option<Text>,
    /// The answer's type.
    pub vtype: Option<Choice<DebconfType>>,
    /// The answer.
    #[serde(alias = "answer")]
    pub value: Option<Text>,
    /// Leave the question's `seen` flag unset (`debconf-set-selections -u`).
    pub unseen: Option<Flag>,
}

impl Params for DebconfParams {
    fn check(&self) -> Result<(), String> {
        let given = [
            self.question.is_some(),
            self.vtype.is_some(),
            self.value.is_some(),
        ];
        if given.contains(&true) && given.contains(&false) {
            // Ansible's words.
            return Err("parameters are required together: question, vtype, value".into());
        }
        Ok(())
    }
}

/// `debconf`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "debconf",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<DebconfParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aliases_and_required_together() {
        let args = json!({"pkg": "tzdata", "selection": "tzdata/Areas", "vtype": "select", "answer": "Etc"});
        let canonical = (SPEC.normalize)(args).expect("valid");
        assert_eq!(canonical["name"], json!("tzdata"));
        assert_eq!(canonical["question"], json!("tzdata/Areas"));
        assert_eq!(canonical["value"], json!("Etc"));
        let partial = (SPEC.normalize)(json!({"name": "tzdata", "question": "tzdata/Areas"}));
        assert!(partial.is_err_and(|e| e.contains("required together")));
        let wrong_type = (SPEC.normalize)(
            json!({"name": "x", "question": "q", "vtype": "number", "value": "1"}),
        );
        assert!(wrong_type.is_err());
    }
}
