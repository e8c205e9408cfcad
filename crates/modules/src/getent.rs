//! `getent`: entries of the image's name-service databases (`passwd`, `group`, `hosts`, ...),
//! returned as the fact `getent_<database>`.
//!
//! The image's own `getent` asked for a database's entries, parsed as Ansible's
//! module parses them into the fact `getent_<database>`.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Text};
use crate::target::Cmd;
use serde_json::{json, Map, Value as Json};

/// Parameters of `getent`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GetentParams {
    /// The database (`passwd`, `group`, `shadow`, `hosts`, ...).
    pub database: Text,
    /// One key of it; every entry without one.
    pub key: Option<Text>,
    /// The NSS service to ask (`-s`).
    pub service: Option<Text>,
    /// What separates an entry's fields (`:` for passwd, shadow, group and gshadow, else
    /// whitespace).
    pub split: Option<Text>,
    /// Fail when the key is not there (default yes).
    pub fail_key: Option<Flag>,
}

impl Params for GetentParams {}

/// `getent`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "getent",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<GetentParams>,
    plan_time: PlanTime::GetentFacts,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// Databases whose fields `:` separates (the others: whitespace).
const COLON: &[&str] = &["passwd", "shadow", "group", "gshadow"];

/// `getent`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: GetentParams = params(SPEC.name, args)?;
    let database = p.database.as_str();
    let mut argv = vec!["getent", database];
    if let Some(key) = &p.key {
        argv.push(key.as_str());
    }
    if let Some(service) = &p.service {
        argv.extend(["-s", service.as_str()]);
    }
    let split = p
        .split
        .as_ref()
        .map(|s| s.as_str().to_owned())
        .or_else(|| COLON.contains(&database).then(|| ":".to_owned()));
    let out = ctx.target.run(&Cmd::new(&argv))?;
    let tree = format!("getent_{database}");
    let msg = match out.rc {
        0 => {
            let facts = json!({ tree: entries(&out.stdout, split.as_deref()) });
            return Ok(ModuleResult::changed(false).with("ansible_facts", facts));
        }
        1 => "Missing arguments, or database unknown.",
        2 => {
            let msg = "One or more supplied key could not be found in the database.";
            if !flag(&p.fail_key, true) {
                let key = p.key.as_ref().map_or("", |k| k.as_str());
                let facts = json!({ tree: { key: null } });
                return Ok(ModuleResult::changed(false)
                    .with("ansible_facts", facts)
                    .with("msg", msg));
            }
            msg
        }
        3 => "Enumeration not supported on this database.",
        127 => "getent is not in the image: install libc-bin (glibc-common on EL)",
        _ => "Unexpected failure!",
    };
    Err(ModuleError::new(msg))
}

/// Each line split into a key and its fields; a key seen again holds a list of its entries.
fn entries(stdout: &str, split: Option<&str>) -> Map<String, Json> {
    let mut tree = Map::new();
    let mut seen: Map<String, Json> = Map::new();
    for line in stdout.lines() {
        let record: Vec<&str> = match split {
            Some(sep) => line.split(sep).collect(),
            None => line.split_whitespace().collect(),
        };
        let Some((key, fields)) = record.split_first() else {
            continue;
        };
        let fields = json!(fields);
        match (seen.get(*key), tree.get_mut(*key)) {
            (Some(_), Some(Json::Array(list))) if seen[*key] != json!(1) => list.push(fields),
            (Some(_), Some(first)) => {
                let first = first.take();
                tree.insert((*key).to_owned(), json!([first, fields]));
                seen.insert((*key).to_owned(), json!(2));
            }
            _ => {
                tree.insert((*key).to_owned(), fields);
                seen.insert((*key).to_owned(), json!(1));
            }
        }
    }
    tree
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_split_as_ansible_splits_them() {
        let tree = entries("root:x:0:0:root:/root:/bin/bash\n", Some(":"));
        assert_eq!(
            tree["root"],
            json!(["x", "0", "0", "root", "/root", "/bin/bash"])
        );
        let hosts = entries(
            "127.0.0.1  localhost\n127.0.0.1  other\n127.0.0.1 third\n",
            None,
        );
        assert_eq!(
            hosts["127.0.0.1"],
            json!([["localhost"], ["other"], ["third"]])
        );
    }
}
