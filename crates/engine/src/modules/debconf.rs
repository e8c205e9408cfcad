//! `debconf`: a package's debconf answers in the image, read with its `debconf-show` and set
//! with its `debconf-set-selections`, as Ansible's module does.

use planner::modules::debconf::{DebconfParams, DebconfType};
use planner::modules::types::Choice;
use serde_json::{json, Map, Value as Json};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::required;
use crate::target::{Cmd, CmdOutput};

/// `debconf`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: DebconfParams = params(planner::modules::debconf::SPEC.name, args)?;
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
    use planner::modules::types::Choices;
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
