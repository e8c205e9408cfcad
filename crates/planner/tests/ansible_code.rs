//! Modules imgbuild does not implement plan as tasks run with Ansible's own code (issue 53):
//! found where Ansible finds them (ansible-core's modules, the machine's collections, the
//! playbook's `library/`), with where they come from and their file's digest in the task, so a
//! changed module or collection changes the layer key. An action plugin of a role or a
//! collection runs with ansible-playbook; one of ansible-core's own is refused with why. Needs Debian's `ansible` (ansible-core and its
//! collections), as CI installs it.

use planner::{plan, Plan, PlanOptions, Project};
use serde_json::Value as Json;

const DEBIAN: &str = "- hosts: localhost
  vars:
    bootstrap: debootstrap
    build_from: bookworm
    kernel_version: \"6.1.0-50-amd64\"
  roles: [r]
";

/// Plans role `r`'s `tasks` in a Debian 12 image, with `extra` files of the project.
fn planned(tasks: &str, extra: &[(&str, &str)]) -> Result<Plan, String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = [("images/t.yml", DEBIAN), ("roles/r/tasks/main.yml", tasks)];
    for (path, body) in files.iter().chain(extra) {
        let target = dir.path().join(path);
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        std::fs::write(target, body).expect("write");
    }
    let project = Project::at(dir.path()).expect("project");
    plan(&project, "t", &PlanOptions::default()).map_err(|e| e.to_string())
}

fn ansible_code(plan: &Plan, index: usize) -> Json {
    let task = &plan.all_tasks()[index];
    task.args["ansible_code"].clone()
}

#[test]
fn a_collection_module_and_an_ansible_core_module_run_with_ansibles_code() {
    let plan = planned(
        "- community.general.crypttab: {name: data, backing_device: /dev/vdb1, state: present}
- dpkg_selections: {name: bash, selection: hold}
- ansible.builtin.dpkg_selections: {name: bash, selection: hold}
",
        &[],
    )
    .expect("plans");
    let crypttab = ansible_code(&plan, 0);
    assert!(
        crypttab["from"]
            .as_str()
            .is_some_and(|f| f.starts_with("community.general ")),
        "{crypttab}"
    );
    assert!(crypttab["file"]
        .as_str()
        .is_some_and(|f| f.ends_with("community/general/plugins/modules/crypttab.py")));
    assert!(crypttab["digest"]
        .as_str()
        .is_some_and(|d| d.starts_with("sha256:") && d.len() == 71));
    assert_eq!(
        plan.all_tasks()[0].args["args"]["backing_device"],
        "/dev/vdb1"
    );
    for index in [1, 2] {
        let core = ansible_code(&plan, index);
        assert!(
            core["from"]
                .as_str()
                .is_some_and(|f| f.starts_with("ansible-core 2.")),
            "{core}"
        );
        assert!(core["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("ansible/modules/dpkg_selections.py")));
    }
}

#[test]
fn the_playbooks_library_comes_before_ansible_core() {
    let plan = planned(
        "- dpkg_selections: {name: bash, selection: hold}\n",
        &[("images/library/dpkg_selections.py", "# the site's own\n")],
    )
    .expect("plans");
    let task = &plan.all_tasks()[0];
    assert_eq!(task.args["ansible_code"], Json::Null, "a project file");
    assert_eq!(
        task.local_file.as_deref(),
        Some("images/library/dpkg_selections.py")
    );
}

#[test]
fn a_module_ansible_runs_through_its_own_action_plugin_is_refused_with_why() {
    let err = planned("- fetch: {src: /etc/hostname, dest: /tmp/}\n", &[]).expect_err("refused");
    assert!(
        err.contains("action plugin of ansible-core") && err.contains("fetch"),
        "{err}"
    );
}

#[test]
fn an_action_plugin_of_the_role_or_a_collection_runs_with_ansible_playbook() {
    let plugin = "from ansible.plugins.action import ActionBase\n";
    let plan = planned(
        "- site_action: {path: /etc/x}
- community.general.iptables_state: {state: saved, path: /etc/iptables.rules}
",
        &[("roles/r/action_plugins/site_action.py", plugin)],
    )
    .expect("plans");
    let tasks = plan.all_tasks();
    assert_eq!(tasks[0].module, "role_module");
    assert_eq!(tasks[0].args["module"], "site_action");
    assert_eq!(tasks[0].args["ansible_action"], true);
    assert_eq!(tasks[0].args["args"]["path"], "/etc/x");
    assert_eq!(
        tasks[0].local_file.as_deref(),
        Some("roles/r/action_plugins/site_action.py")
    );
    let collection = &tasks[1];
    assert_eq!(collection.args["ansible_action"], true);
    assert!(collection.args["ansible_code"]["file"]
        .as_str()
        .is_some_and(|f| f.ends_with("community/general/plugins/action/iptables_state.py")));
    assert!(collection.args["ansible_code"]["from"]
        .as_str()
        .is_some_and(|f| f.starts_with("community.general ")));
}

#[test]
fn a_module_nobody_has_is_still_unknown() {
    let err = planned("- no_such_module_anywhere: {a: 1}\n", &[]).expect_err("unknown");
    assert!(err.contains("no_such_module_anywhere"), "{err}");
}

#[test]
fn an_option_only_ansibles_module_takes_runs_the_task_with_ansibles_module() {
    let plan = planned(
        "- find: {paths: /srv, age: 1d}\n- find: {paths: /srv}\n",
        &[],
    )
    .expect("plans");
    let tasks = plan.all_tasks();
    assert_eq!(tasks[0].module, "role_module");
    assert_eq!(tasks[0].args["module"], "find");
    assert_eq!(tasks[0].args["args"]["age"], "1d");
    assert!(tasks[0].args["ansible_code"]["file"]
        .as_str()
        .is_some_and(|f| f.ends_with("ansible/modules/find.py")));
    // Without it, imgbuild's own find plans the task.
    assert_eq!(tasks[1].module, "find");
    // An option Ansible's module does not take either is still a mistake.
    let err = planned("- find: {paths: /srv, agee: 1d}\n", &[]).expect_err("misspelt");
    assert!(err.contains("agee"), "{err}");
    // copy runs through an action plugin of Ansible's: its options are refused as before.
    let err = planned(
        "- copy: {content: hi, dest: /etc/hi, seuser: system_u}\n",
        &[],
    )
    .expect_err("refused");
    assert!(err.contains("does not support it yet"), "{err}");
}

#[test]
fn a_zip_or_a_tar_with_tars_options_carries_the_digest_of_ansibles_unarchive() {
    let plan = planned(
        "- unarchive: {src: site.zip, dest: /opt}
- unarchive: {src: site.tar.gz, dest: /opt, extra_opts: [--strip-components=1]}
- unarchive: {src: site.tar.gz, dest: /opt, exclude: ['doc/*']}
",
        &[
            ("roles/r/files/site.zip", "PK"),
            ("roles/r/files/site.tar.gz", "gz"),
        ],
    )
    .expect("plans");
    let zip = ansible_code(&plan, 0);
    assert!(
        zip["from"]
            .as_str()
            .is_some_and(|f| f.starts_with("ansible-core 2.")),
        "{zip}"
    );
    assert!(zip["file"]
        .as_str()
        .is_some_and(|f| f.ends_with("ansible/modules/unarchive.py")));
    assert!(zip["digest"]
        .as_str()
        .is_some_and(|d| d.starts_with("sha256:") && d.len() == 71));
    assert_eq!(
        ansible_code(&plan, 1),
        Json::Null,
        "imgbuild extracts a tar"
    );
    let excluding = ansible_code(&plan, 2);
    assert_eq!(
        excluding["digest"], zip["digest"],
        "Ansible's module extracts a tar with GNU tar's exclude patterns"
    );
}
