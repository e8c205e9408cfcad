//! `module_defaults:` as Ansible applies them (`get_action_args_with_defaults`): the play's,
//! the role entry's, the blocks' and includes' and the task's own, outermost first, each a
//! mapping (or a list of mappings) from a module's name to default arguments; a later mapping
//! replaces an earlier one's entry for the same module, and the task's own arguments win over
//! every default. `service` and `package` also take the defaults of the module they hand the
//! task to (`systemd`, `apt` or `dnf`), beneath their own, as their action plugins do.
//! `group/…` entries name a collection's action group, which none of imgbuild's own modules
//! is in: they apply to no task here, as under Ansible.

use serde_json::{Map, Value as Json};

use crate::error::{ErrorKind, Location, PlanError, Result};

/// A module name as Ansible resolves it for module_defaults: `ansible.builtin.` and
/// `ansible.legacy.` names are the short name, and imgbuild's aliases are the module's name.
fn canonical(name: &str) -> String {
    let short = ["ansible.builtin.", "ansible.legacy."]
        .iter()
        .find_map(|prefix| name.strip_prefix(prefix))
        .unwrap_or(name);
    crate::modules::lookup(short).map_or_else(|| short.to_owned(), |spec| spec.name.to_owned())
}

/// The module_defaults chain merged into one mapping from canonical module names to their
/// defaults, later entries replacing earlier ones, as written (rendered with the arguments).
fn merged(chain: &[&Json], at: &Location) -> Result<Map<String, Json>> {
    let mut merged = Map::new();
    for entry in chain {
        let mappings: Vec<&Json> = match entry {
            Json::Array(items) => items.iter().collect(),
            Json::Null => Vec::new(),
            other => vec![other],
        };
        for mapping in mappings {
            let Json::Object(map) = mapping else {
                return Err(PlanError::new(
                    at.clone(),
                    ErrorKind::WrongType {
                        what: "module_defaults".into(),
                        expected: "a mapping of module names to their default arguments",
                        found: crate::modules::types::json_type(mapping),
                    },
                ));
            };
            for (name, defaults) in map {
                merged.insert(canonical(name), defaults.clone());
            }
        }
    }
    Ok(merged)
}

/// The backend module whose defaults a `service` or `package` task also takes.
fn backend(module: &str, pkg_mgr: Option<&str>) -> Option<String> {
    match module {
        "service" => Some("systemd".to_owned()),
        "package" => pkg_mgr.map(canonical),
        _ => None,
    }
}

/// `args` of a task running `module` with the defaults of `chain` beneath them.
pub(crate) fn apply(
    module: &str,
    args: &Map<String, Json>,
    chain: &[&Json],
    pkg_mgr: Option<&str>,
    at: &Location,
) -> Result<Map<String, Json>> {
    if chain.is_empty() {
        return Ok(args.clone());
    }
    let defaults = merged(chain, at)?;
    let module = canonical(module);
    let mut applied = Map::new();
    let layers = [backend(&module, pkg_mgr), Some(module)];
    for name in layers.iter().flatten() {
        match defaults.get(name) {
            Some(Json::Object(these)) => applied.extend(these.clone()),
            Some(Json::Null) | None => {}
            Some(other) => {
                return Err(PlanError::new(
                    at.clone(),
                    ErrorKind::WrongType {
                        what: format!("module_defaults for {name}"),
                        expected: "a mapping of arguments",
                        found: crate::modules::types::json_type(other),
                    },
                ))
            }
        }
    }
    applied.extend(args.clone());
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at() -> Location {
        Location::new(std::path::Path::new("roles/r/tasks/main.yml"), 3)
    }

    fn object(value: Json) -> Map<String, Json> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn inner_defaults_replace_outer_ones_and_arguments_win() {
        let play = json!({"ansible.builtin.copy": {"mode": "0600", "owner": "root"}});
        let block = json!([{"copy": {"mode": "0640"}}, {"file": {"state": "touch"}}]);
        let args = object(json!({"dest": "/etc/x", "content": "x"}));
        let applied = apply("copy", &args, &[&play, &block], None, &at()).expect("applies");
        assert_eq!(
            Json::Object(applied),
            json!({"mode": "0640", "dest": "/etc/x", "content": "x"})
        );
        let own = object(json!({"dest": "/etc/y", "mode": "0644"}));
        let applied = apply("ansible.legacy.copy", &own, &[&play], None, &at()).expect("applies");
        assert_eq!(applied["mode"], json!("0644"));
        assert_eq!(applied["owner"], json!("root"));
    }

    #[test]
    fn service_and_package_take_their_backends_defaults_beneath_their_own() {
        let chain = json!({
            "systemd": {"enabled": true, "daemon_reload": true},
            "service": {"enabled": false},
            "apt": {"update_cache": true},
        });
        let service = apply(
            "service",
            &object(json!({"name": "x"})),
            &[&chain],
            None,
            &at(),
        )
        .expect("applies");
        assert_eq!(
            Json::Object(service),
            json!({"enabled": false, "daemon_reload": true, "name": "x"})
        );
        let package = apply(
            "package",
            &object(json!({"name": "vim"})),
            &[&chain],
            Some("apt"),
            &at(),
        )
        .expect("applies");
        assert_eq!(package["update_cache"], json!(true));
    }

    #[test]
    fn a_list_where_a_mapping_belongs_is_refused() {
        let chain = json!({"copy": ["mode"]});
        let error = apply("copy", &Map::new(), &[&chain], None, &at()).expect_err("refused");
        assert!(
            error.to_string().contains("module_defaults for copy"),
            "{error}"
        );
    }
}
