//! `debconf`: the image's debconf answers of a package, read with `debconf-show` and set with
//! `debconf-set-selections`, as Ansible's module does on its host.
//!
//! A package's debconf answers in the image, read with its `debconf-show` and set
//! with its `debconf-set-selections`, as Ansible's module does.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::required;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text};
use crate::target::{Cmd, CmdOutput};
use serde_json::{json, Map, Value as Json};

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

// How it runs in the rootfs.

/// `debconf`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: DebconfParams = params(SPEC.name, args)?;
    let package = p.name.as_str();
    let out = required::run(ctx, &Cmd::new(&["debconf-show", package]))?;
    if out.rc != 0 {
        return Err(ModuleError::new(out.stderr));
    }
    let mut previous = selections(&out.stdout)?;
    let (Some(question), Some(vtype), Some(value)) = (&p.question, &p.vtype, &p.value) else {
        return Ok(ModuleResult::changed(false)
            .with("msg", "")
            .with("current", previous));
    };
    let question = question.as_str();
    let vtype = match vtype {
        Choice::Known(known) => *known,
        Choice::Deferred(text) => {
            return Err(ModuleError::new(format!("vtype '{text}' was not rendered")))
        }
    };
    let boolean = vtype == DebconfType::Boolean;
    let mut value = value.as_str().to_owned();
    let changed = match previous.get(question).and_then(Json::as_str) {
        None => true,
        Some(existing) => {
            // Booleans compare as debconf writes them (true/false).
            if boolean {
                value = value.to_lowercase();
            }
            value
                != if boolean {
                    existing.to_lowercase()
                } else {
                    existing.to_owned()
                }
        }
    };
    if !changed {
        return Ok(ModuleResult::changed(false)
            .with("msg", "")
            .with("current", previous));
    }
    let mut msg = String::new();
    if !ctx.check {
        let out = set_selection(
            ctx,
            package,
            question,
            vtype,
            &value,
            flag(&p.unseen, false),
        )?;
        if out.rc != 0 {
            return Err(ModuleError::new(out.stderr));
        }
        msg = out.stdout;
    }
    let current = json!({ question: value });
    previous = match previous.remove(question) {
        Some(old) => Map::from_iter([(question.to_owned(), old)]),
        None => {
            previous.insert(question.to_owned(), json!(""));
            previous
        }
    };
    let mut result = ModuleResult::changed(true)
        .with("msg", msg)
        .with("current", current)
        .with("previous", previous.clone());
    let diff = if ctx.diff {
        let mut after = previous.clone();
        after.insert(question.to_owned(), json!(value));
        json!({"before": previous, "after": after})
    } else {
        json!({})
    };
    result.fields.insert("diff".into(), diff);
    Ok(result)
}

/// Answers a question with `debconf-set-selections` (`-u`: leave it unseen).
fn set_selection(
    ctx: &ModuleCtx,
    package: &str,
    question: &str,
    vtype: DebconfType,
    value: &str,
    unseen: bool,
) -> Result<CmdOutput, ModuleError> {
    use crate::types::Choices;
    let mut argv = vec!["debconf-set-selections"];
    if unseen {
        argv.push("-u");
    }
    let mut cmd = Cmd::new(&argv);
    let value = match (vtype, value) {
        (DebconfType::Boolean, "True") => "true",
        (DebconfType::Boolean, "False") => "false",
        _ => value,
    };
    // Ansible's run_command ends the data with a newline.
    cmd.stdin = Some(format!("{package} {question} {} {value}\n", vtype.as_str()));
    required::run(ctx, &cmd)
}

/// `debconf-show`'s lines (`* question: answer`, `*` when seen) as question → answer.
fn selections(stdout: &str) -> Result<Map<String, Json>, ModuleError> {
    let mut map = Map::new();
    for line in stdout.lines() {
        let (key, value) = line.split_once(':').ok_or_else(|| {
            ModuleError::new(format!("debconf-show printed a line without ':': {line}"))
        })?;
        let key = key.trim_matches('*').trim();
        map.insert(key.to_owned(), json!(value.trim()));
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_read_as_ansible_reads_them() {
        let map = selections("* tzdata/Areas: Etc\n  tzdata/Zones/Etc: UTC\n  a/b: x: y\n")
            .expect("parsed");
        assert_eq!(map["tzdata/Areas"], json!("Etc"));
        assert_eq!(map["tzdata/Zones/Etc"], json!("UTC"));
        assert_eq!(map["a/b"], json!("x: y"));
        assert!(selections("no colon here\n").is_err());
    }
}

#[cfg(test)]
mod spec_tests {
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
