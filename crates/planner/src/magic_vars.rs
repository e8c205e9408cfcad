//! Ansible's magic variables as an image build gives them: the host's (the image is the one
//! host of its inventory) and the run's own (tags, forks, the play's roles).

use serde_json::{json, Value as Json};

use crate::recipe::Recipe;

/// Ansible's magic variables, with image-build meanings.
pub(crate) fn magic_vars(recipe: &Recipe) -> Vec<(String, Json)> {
    vec![
        ("inventory_hostname".into(), json!(recipe.image)),
        ("inventory_hostname_short".into(), json!(recipe.image)),
        // What Ansible connects to when the inventory names no address: the host's name.
        ("ansible_host".into(), json!(recipe.image)),
        (
            "playbook_dir".into(),
            json!(recipe
                .path
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default()),
        ),
        ("ansible_play_name".into(), json!(recipe.image)),
        ("ansible_check_mode".into(), json!(false)),
        // The plan's; the build's follows `--diff`.
        ("ansible_diff_mode".into(), json!(false)),
        ("ansible_connection".into(), json!("chroot")),
        ("ansible_managed".into(), json!("Ansible managed")),
        ("group_names".into(), json!([])),
        (
            "groups".into(),
            json!({"all": [recipe.image], "ungrouped": [recipe.image]}),
        ),
        ("play_hosts".into(), json!([recipe.image])),
        ("ansible_play_hosts".into(), json!([recipe.image])),
        ("ansible_play_hosts_all".into(), json!([recipe.image])),
        ("ansible_play_batch".into(), json!([recipe.image])),
        // A run without -v; the Ansible whose behaviour imgbuild matches (Debian 12's).
        ("ansible_verbosity".into(), json!(0)),
        (
            "ansible_version".into(),
            json!({"full": "2.14.18", "major": 2, "minor": 14, "revision": 18, "string": "2.14.18"}),
        ),
    ]
}

/// The magic variables of the run itself, as ansible-playbook 2.14 sets them for the one play of
/// `recipe` run with `tags`: the tags, its defaults (5 forks, no configuration file), the
/// Python the machine's Ansible runs on, the play's roles (the roles their `meta` pulls in
/// are not listed), and the inventory, which is the image alone.
pub(crate) fn run_vars(recipe: &Recipe, tags: &crate::tags::TagFilter) -> Vec<(String, Json)> {
    let roles: Vec<&str> = recipe.roles.iter().map(|r| r.name.as_str()).collect();
    let run_tags = match tags.only.is_empty() {
        true => vec!["all".to_owned()],
        false => tags.only.clone(),
    };
    let python = ansible::python::interpreters().into_iter().next();
    vec![
        ("ansible_run_tags".into(), json!(run_tags)),
        ("ansible_skip_tags".into(), json!(tags.skip)),
        ("ansible_forks".into(), json!(5)),
        ("ansible_config_file".into(), Json::Null),
        ("ansible_playbook_python".into(), json!(python)),
        ("ansible_role_names".into(), json!(roles)),
        ("ansible_play_role_names".into(), json!(roles)),
        ("role_names".into(), json!(roles)),
        ("ansible_dependent_role_names".into(), json!([])),
        (
            "ansible_inventory_sources".into(),
            json!([format!("{},", recipe.image)]),
        ),
    ]
}
