//! `group_by` and `add_host`: the build's in-memory inventory (see [`crate::inventory`]),
//! changed as Ansible's strategy changes it from these actions' results.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Text, TextList};

/// Parameters of `group_by`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupByParams {
    /// The group the host joins (spaces become dashes).
    pub key: Option<Text>,
    /// Its parent groups: one name, or a list (default `all`).
    pub parents: Option<Parents>,
}

/// `parents` of `group_by`: a string is one group's name, not a comma list.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Parents {
    /// One group.
    One(Text),
    /// Several.
    Many(Vec<Text>),
}

impl GroupByParams {
    /// The parent groups' names.
    pub fn parent_names(&self) -> Vec<String> {
        match &self.parents {
            None => vec!["all".to_owned()],
            Some(Parents::One(name)) => vec![name.to_string()],
            Some(Parents::Many(names)) => names.iter().map(Text::to_string).collect(),
        }
    }
}

impl Params for GroupByParams {}

/// `group_by`.
pub static GROUP_BY: ModuleSpec = ModuleSpec {
    name: "group_by",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<GroupByParams>,
    plan_time: PlanTime::Inventory,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

/// What `add_host` adds: a host, its groups, and its variables (every other argument).
#[derive(Debug, Clone, PartialEq)]
pub struct AddHost {
    /// The host's name (a `:port` taken off into `ansible_ssh_port`).
    pub name: String,
    /// The groups it joins.
    pub groups: Vec<String>,
    /// Its variables.
    pub vars: Map<String, Json>,
}

/// Reads `add_host`'s arguments as Ansible's action does.
pub fn add_host(args: &Json) -> Result<AddHost, String> {
    let Json::Object(map) = args else {
        return Err("Invalid raw parameters passed, requires a dictonary/mapping".into());
    };
    let name = ["name", "hostname", "host"]
        .iter()
        .find_map(|k| map.get(*k))
        .ok_or("name, host or hostname needs to be provided")?;
    let name: Text = serde_json::from_value(name.clone()).map_err(|e| e.to_string())?;
    let groups = match ["groupname", "groups", "group"]
        .iter()
        .find_map(|k| map.get(*k))
    {
        None => Vec::new(),
        Some(Json::Bool(false) | Json::Null) => Vec::new(),
        Some(groups) => {
            serde_json::from_value::<TextList>(groups.clone())
                .map_err(|_| "Groups must be specified as a list.".to_owned())?
                .0
        }
    };
    let mut vars: Map<String, Json> = map
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "name" | "hostname" | "groupname" | "groups"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut name = name.to_string();
    if let Some((host, port)) = name
        .rsplit_once(':')
        .filter(|(h, p)| !h.contains(':') && !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    {
        vars.insert(
            "ansible_ssh_port".into(),
            Json::from(port.parse::<u64>().unwrap_or(0)),
        );
        name = host.to_owned();
    }
    Ok(AddHost { name, groups, vars })
}

/// Checks `add_host`'s arguments; they stay as written (any other key is a host variable).
fn normalize_add_host(args: Json) -> Result<Json, String> {
    add_host(&args)?;
    Ok(args)
}

/// `add_host`.
pub static ADD_HOST: ModuleSpec = ModuleSpec {
    name: "add_host",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: normalize_add_host,
    plan_time: PlanTime::Inventory,
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
    fn add_host_reads_name_groups_and_vars_as_ansible_does() {
        let added =
            add_host(&json!({"hostname": "web:2222", "groups": "a, b", "x": 1})).expect("valid");
        assert_eq!(added.name, "web");
        assert_eq!(added.groups, vec!["a", "b"]);
        assert_eq!(added.vars["x"], json!(1));
        assert_eq!(added.vars["ansible_ssh_port"], json!(2222));
        assert!(add_host(&json!({"groups": "a"}))
            .is_err_and(|e| e == "name, host or hostname needs to be provided"));
    }

    #[test]
    fn group_by_parents_are_one_name_or_a_list() {
        let one: GroupByParams =
            serde_json::from_value(json!({"key": "k", "parents": "a,b"})).expect("valid");
        assert_eq!(one.parent_names(), vec!["a,b"]);
        let none: GroupByParams = serde_json::from_value(json!({"key": "k"})).expect("valid");
        assert_eq!(none.parent_names(), vec!["all"]);
    }
}
