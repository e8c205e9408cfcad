//! Ansible semantics the planner must get right, each on a small project in a temp folder.

use planner::plan::Step;
use planner::{plan, Plan, PlanOptions, PlannedTask, Project, TagFilter};
use serde_json::{json, Value};

const RECIPE: &str = "- hosts: localhost
  become: yes
  vars:
    build_from: \"docker.io/rockylinux/rockylinux:9.5\"
    kernel_version: \"5.14.0-503.40.1.el9_5.x86_64\"
    level: recipe
  roles: [r]
";

fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut with_recipe: Vec<(&str, &str)> = files.to_vec();
    if !files.iter().any(|(p, _)| p.starts_with("images/")) {
        with_recipe.push(("images/t.yml", RECIPE));
    }
    for (path, body) in with_recipe {
        let target = dir.path().join(path);
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        std::fs::write(target, body).expect("write");
    }
    let project = Project::at(dir.path()).expect("project");
    (dir, project)
}

fn planned(files: &[(&str, &str)], opts: &PlanOptions) -> Plan {
    let (_dir, project) = project(files);
    plan(&project, "t", opts).unwrap_or_else(|e| panic!("plan failed: {e}"))
}

fn tasks(plan: &Plan) -> Vec<&PlannedTask> {
    plan.all_tasks()
}

fn debug_msgs(plan: &Plan) -> Vec<Value> {
    tasks(plan).iter().map(|t| t.args["msg"].clone()).collect()
}

#[test]
fn variable_precedence_follows_the_design() {
    let files = [
        ("mirror.toml", "url = \"http://mirror/\"\n"),
        (
            "roles/r/defaults/main.yml",
            "level: default\nonly_default: d\nmirror_server: http://from-defaults/\n",
        ),
        (
            "roles/r/vars/main.yml",
            "role_level: role-vars\nlevel_two: role-vars\n",
        ),
        (
            "roles/r/tasks/main.yml",
            r#"- debug: msg="{{ level }}"
- debug: msg="{{ only_default }}"
- debug: msg="{{ mirror_server }}"
- debug: msg="{{ level_two }}"
  vars: {level_two: task}
- set_fact: {level_two: fact}
- debug: msg="{{ level_two }}"
  vars: {level_two: task}
- debug: msg="{{ cli }}"
  vars: {cli: task}
"#,
        ),
    ];
    let mut opts = PlanOptions::default();
    opts.extra_vars.insert("cli".into(), json!("extra"));
    let plan = planned(&files, &opts);
    let msgs: Vec<Value> = tasks(&plan)
        .iter()
        .filter(|t| t.module == "debug")
        .map(|t| t.args["msg"].clone())
        .collect();
    assert_eq!(
        msgs,
        vec![
            json!("recipe"),
            json!("d"),
            json!("http://mirror/"),
            json!("task"),
            json!("fact"),
            json!("extra")
        ]
    );
}

#[test]
fn register_defers_and_known_conditions_fold() {
    let files = [(
        "roles/r/tasks/main.yml",
        "- command: cat /etc/os-release\n  register: osr\n  changed_when: false\n\
         - debug: msg=\"{{ osr.stdout }}\"\n  when: osr.rc == 0\n\
         - debug: msg=never\n  when: ansible_distribution == 'Debian'\n\
         - debug: msg=always\n  when:\n    - ansible_distribution_major_version is version('9', '>=')\n    - true\n",
    )];
    let plan = planned(&files, &PlanOptions::default());
    let t = tasks(&plan);
    assert_eq!(t.len(), 3, "the Debian-only task folds away");
    assert_eq!(t[0].register.as_deref(), Some("osr"));
    assert_eq!(t[0].changed_when.as_deref(), Some("false"));
    assert_eq!(t[1].when.as_deref(), Some("osr.rc == 0"));
    assert_eq!(t[1].deferred, vec!["msg".to_string()]);
    assert_eq!(t[1].args["msg"], json!("{{ osr.stdout }}"));
    assert_eq!(t[2].when, None);
}

#[test]
fn blocks_with_rescue_stay_blocks_and_inherit_conditions() {
    let files = [(
        "roles/r/tasks/main.yml",
        "- name: guarded\n  when: ansible_os_family == 'RedHat'\n  tags: [net]\n  block:\n    - shell: a\n  rescue:\n    - shell: b\n  always:\n    - shell: c\n\
         - block:\n    - shell: flat\n  vars: {x: 1}\n",
    )];
    let plan = planned(&files, &PlanOptions::default());
    match &plan.tasks[0] {
        Step::Block(b) => {
            assert_eq!(b.name, "guarded");
            assert_eq!((b.block.len(), b.rescue.len(), b.always.len()), (1, 1, 1));
            assert_eq!(b.source, "roles/r/tasks/main.yml:1");
            let inner = b.block[0].tasks()[0];
            assert_eq!(inner.tags, vec!["net".to_string()]);
        }
        other => panic!("expected a block, got {other:?}"),
    }
    match &plan.tasks[1] {
        Step::Task(t) => assert_eq!(t.args["cmd"], json!("flat")),
        other => panic!("a block without rescue/always is flattened, got {other:?}"),
    }
}

#[test]
fn include_tags_apply_to_the_include_import_tags_to_the_tasks() {
    let files = [
        (
            "roles/r/tasks/main.yml",
            "- include_tasks: inc.yml\n  tags: [inc]\n- import_tasks: imp.yml\n  tags: [imp]\n",
        ),
        (
            "roles/r/tasks/inc.yml",
            "- debug: msg=included-untagged\n- debug: msg=included-tagged\n  tags: [inc]\n",
        ),
        ("roles/r/tasks/imp.yml", "- debug: msg=imported\n"),
    ];
    let only = |tags: &[&str]| PlanOptions {
        tags: TagFilter {
            only: tags.iter().map(|s| s.to_string()).collect(),
            skip: Vec::new(),
        },
        ..PlanOptions::default()
    };
    assert_eq!(
        debug_msgs(&planned(&files, &only(&["inc"]))),
        vec![json!("included-tagged")]
    );
    assert_eq!(
        debug_msgs(&planned(&files, &only(&["imp"]))),
        vec![json!("imported")]
    );
    assert_eq!(
        debug_msgs(&planned(&files, &PlanOptions::default())).len(),
        3
    );
}

#[test]
fn loops_expand_per_item_with_when_per_item() {
    let files = [(
        "roles/r/tasks/main.yml",
        "- debug: msg=\"{{ item }}\"\n  loop: [a, b, c]\n  when: item != 'b'\n\
         - debug: msg=\"{{ pkg }}-{{ i }}\"\n  with_items: [[x, y], z]\n  loop_control: {loop_var: pkg, index_var: i}\n\
         - include_tasks: each.yml\n  loop: [1, 2]\n",
    ), ("roles/r/tasks/each.yml", "- debug: msg=\"each {{ item }}\"\n")];
    let plan = planned(&files, &PlanOptions::default());
    assert_eq!(
        debug_msgs(&plan),
        vec![
            json!("a"),
            json!("c"),
            json!("x-0"),
            json!("y-1"),
            json!("z-2"),
            json!("each 1"),
            json!("each 2")
        ]
    );
    let first = tasks(&plan)[0].item.clone().expect("item");
    assert_eq!((first.index, first.length), (0, 3));
}

#[test]
fn a_loop_over_a_registered_result_stays_one_deferred_task() {
    let files = [(
        "roles/r/tasks/main.yml",
        "- command: ls /lib/modules\n  register: kernels\n- debug: msg=\"{{ item }}\"\n  loop: \"{{ kernels.stdout_lines }}\"\n",
    )];
    let plan = planned(&files, &PlanOptions::default());
    let t = tasks(&plan);
    assert_eq!(t.len(), 2);
    assert_eq!(t[1].loop_over, Some(json!("{{ kernels.stdout_lines }}")));
    assert_eq!(t[1].deferred, vec!["msg".to_string()]);
}

#[test]
fn handlers_are_planned_and_notify_is_checked() {
    let files = [
        (
            "roles/r/tasks/main.yml",
            "- copy: {content: x, dest: /etc/x}\n  notify: reload things\n",
        ),
        (
            "roles/r/handlers/main.yml",
            "- name: restart x\n  listen: reload things\n  systemd: {name: x, enabled: yes}\n",
        ),
    ];
    let plan = planned(&files, &PlanOptions::default());
    assert_eq!(plan.handlers.len(), 1);
    assert_eq!(tasks(&plan)[0].notify, vec!["reload things".to_string()]);
}

/// Ansible runs a handler only when notified: one with a keyword image builds refuse
/// (`delegate_to`, `local_action`) plans while nothing notifies it. (Notified, it is refused at
/// its line: tests/broken/notified_handler_delegates.case.)
#[test]
fn a_handler_nothing_notifies_may_use_what_builds_refuse() {
    let files = [
        (
            "roles/r/tasks/main.yml",
            "- copy: {content: x, dest: /etc/x}\n  notify: restart x\n",
        ),
        (
            "roles/r/handlers/main.yml",
            "- name: restart x\n  systemd: {name: x, state: restarted}\n- name: tell the controller\n  command: echo done\n  delegate_to: localhost\n- name: page someone\n  local_action: command echo paged\n",
        ),
    ];
    let planned = planned(&files, &PlanOptions::default());
    assert_eq!(
        planned.handlers.len(),
        1,
        "only the handler the build can run"
    );
    let (_dir, refused) = project(&[(
        "roles/r/tasks/main.yml",
        "- command: echo hi\n  delegate_to: localhost\n",
    )]);
    let err = plan(&refused, "t", &PlanOptions::default()).expect_err("a task is refused");
    assert!(
        err.to_string().contains("'delegate_to' is not supported"),
        "{err}"
    );
    // What imgbuild runs itself (debug, set_fact, assert) runs wherever it is sent.
    let (_debug_dir, runs_anywhere) = project(&[(
        "roles/r/tasks/main.yml",
        "- debug: msg=hi\n  delegate_to: localhost\n",
    )]);
    assert!(plan(&runs_anywhere, "t", &PlanOptions::default()).is_ok());
}

#[test]
fn include_role_uses_the_included_roles_defaults_and_files() {
    let files = [
        (
            "roles/r/tasks/main.yml",
            "- include_role:\n    name: other\n    tasks_from: setup\n",
        ),
        (
            "roles/other/defaults/main.yml",
            "greeting: hello from other\n",
        ),
        (
            "roles/other/tasks/setup.yml",
            "- template: {src: t.j2, dest: /etc/t}\n",
        ),
        (
            "roles/other/templates/t.j2",
            "{{ greeting }} in {{ role_name }}\n",
        ),
    ];
    let plan = planned(&files, &PlanOptions::default());
    let t = tasks(&plan)[0];
    assert_eq!(t.role, "r", "the task belongs to the recipe role's layer");
    assert_eq!(t.local_file.as_deref(), Some("roles/other/templates/t.j2"));
    assert_eq!(t.rendered.as_deref(), Some("hello from other in other\n"));
}

#[test]
fn a_role_sees_the_defaults_and_vars_of_the_roles_it_depends_on() {
    // Ansible's Role.get_default_vars and get_vars: every dependency's, the role's own on top.
    let files = [
        ("roles/r/meta/main.yml", "dependencies: [dep]\n"),
        ("roles/r/defaults/main.yml", "shared: from r\n"),
        (
            "roles/r/tasks/main.yml",
            "- debug: {msg: \"{{ deep }} {{ from_dep }} {{ shared }} {{ dep_var }}\"}\n",
        ),
        ("roles/dep/meta/main.yml", "dependencies: [leaf]\n"),
        (
            "roles/dep/defaults/main.yml",
            "from_dep: dep default\nshared: from dep\n",
        ),
        ("roles/dep/vars/main.yml", "dep_var: dep var\n"),
        ("roles/dep/tasks/main.yml", "- debug: {msg: dep}\n"),
        ("roles/leaf/defaults/main.yml", "deep: leaf default\n"),
        ("roles/leaf/tasks/main.yml", "- debug: {msg: leaf}\n"),
    ];
    let plan = planned(&files, &PlanOptions::default());
    assert_eq!(
        debug_msgs(&plan),
        vec![
            json!("leaf"),
            json!("dep"),
            json!("leaf default dep default from r dep var")
        ]
    );
}

#[test]
fn omit_drops_the_parameter_and_yaml11_values_are_typed() {
    let files = [(
        "roles/r/tasks/main.yml",
        "- file:\n    path: /etc/x\n    state: directory\n    owner: \"{{ nobody | default(omit) }}\"\n    mode: 0755\n    recurse: yes\n\
         - file:\n    path: /etc/y\n    state: touch\n    mode: 644\n",
    )];
    let plan = planned(&files, &PlanOptions::default());
    let t = tasks(&plan);
    assert_eq!(
        t[0].args,
        json!({"path": "/etc/x", "state": "directory", "mode": "0755", "recurse": true})
    );
    assert_eq!(
        t[1].args["mode"],
        json!("1204"),
        "decimal 644 is applied as Ansible does"
    );
    assert_eq!(plan.warnings.len(), 1);
    assert!(
        plan.warnings[0].message.contains("write '0644'"),
        "{:?}",
        plan.warnings
    );
    assert_eq!(plan.warnings[0].source, "roles/r/tasks/main.yml:10");
}

#[test]
fn set_fact_from_known_values_resolves_later_tasks() {
    let files = [(
        "roles/r/tasks/main.yml",
        "- set_fact:\n    pkg_name: \"kernel-devel-{{ ansible_kernel }}\"\n- debug: msg=\"{{ pkg_name }}\"\n",
    )];
    let plan = planned(&files, &PlanOptions::default());
    assert_eq!(
        debug_msgs(&plan)[1],
        json!("kernel-devel-5.14.0-503.40.1.el9_5.x86_64")
    );
}

#[test]
fn inputs_record_every_file_read() {
    let files = [
        (
            "roles/r/tasks/main.yml",
            "- include_tasks: more.yml\n- copy: {src: f.txt, dest: /f}\n",
        ),
        ("roles/r/tasks/more.yml", "- debug: msg=x\n"),
        ("roles/r/files/f.txt", "f\n"),
        ("roles/unused/tasks/main.yml", "- debug: msg=unused\n"),
    ];
    let plan = planned(&files, &PlanOptions::default());
    assert_eq!(
        plan.inputs,
        vec![
            "images/t.yml",
            "roles/r/files/f.txt",
            "roles/r/tasks/main.yml",
            "roles/r/tasks/more.yml"
        ]
    );
}

#[test]
fn become_user_comes_from_keywords_blocks_and_connection_variables() {
    let files = [(
        "roles/r/tasks/main.yml",
        "- shell: a\n  become: true\n  become_user: alice\n\
         - block:\n    - shell: b\n    - shell: c\n      become_user: carol\n  become: yes\n  become_user: bob\n\
         - shell: d\n  become_user: dave\n\
         - shell: e\n  become_user: ignored\n  vars:\n    ansible_become: yes\n    ansible_become_user: \"{{ who }}\"\n    who: erin\n\
         - shell: f\n  become: true\n",
    )];
    let plan = planned(&files, &PlanOptions::default());
    let users: Vec<Option<&str>> = tasks(&plan)
        .iter()
        .map(|t| t.become_user.as_deref())
        .collect();
    assert_eq!(
        users,
        vec![
            Some("alice"),
            Some("bob"),
            Some("carol"),
            None,
            Some("erin"),
            None
        ]
    );
}

#[test]
fn check_mode_is_the_tasks_or_its_blocks() {
    let files = [(
        "roles/r/tasks/main.yml",
        "- shell: a\n  check_mode: yes\n\
         - block:\n    - shell: b\n    - shell: c\n      check_mode: false\n  check_mode: true\n\
         - shell: d\n",
    )];
    let plan = planned(&files, &PlanOptions::default());
    let modes: Vec<Option<bool>> = tasks(&plan).iter().map(|t| t.check_mode).collect();
    assert_eq!(modes, vec![Some(true), Some(true), Some(false), None]);
}

#[test]
fn async_on_an_action_that_refuses_it_fails_the_task_as_ansible_does() {
    let files = [(
        "roles/r/tasks/main.yml",
        "- script: /some/script.sh\n  async: 2\n  ignore_errors: true\n\
         - shell: sleep 1\n  async: 2\n",
    )];
    let plan = planned(&files, &PlanOptions::default());
    let all = tasks(&plan);
    assert_eq!(
        all[0].fails.as_deref(),
        Some("async is not supported for this task.")
    );
    assert_eq!(all[1].fails, None);
}

#[test]
fn a_fact_named_by_a_result_is_named_by_the_build() {
    // Ansible renders set_fact's names when the task runs: the plan keeps the template for the
    // build, and a later use of a name only the build may have set is left to it too.
    let files = [(
        "roles/r/tasks/main.yml",
        r#"- command: cat /etc/hostname
  register: found
- set_fact:
    "{{ found.stdout }}": true
- debug: msg="{{ some_host_name }}"
"#,
    )];
    let plan = planned(&files, &PlanOptions::default());
    let all = tasks(&plan);
    let set_fact = all
        .iter()
        .find(|t| t.module == "set_fact")
        .expect("set_fact");
    assert!(
        set_fact.args.get("{{ found.stdout }}").is_some(),
        "{:?}",
        set_fact.args
    );
    assert!(set_fact.deferred.iter().any(|d| d == "{{ found.stdout }}"));
    let debug = all.iter().find(|t| t.module == "debug").expect("debug");
    assert!(
        debug.deferred.iter().any(|d| d == "msg"),
        "{:?}",
        debug.deferred
    );
}

#[test]
fn image_facts_under_ansible_facts_are_left_to_the_build() {
    let files = [(
        "roles/r/tasks/main.yml",
        "- debug: msg=py2\n  when: ansible_facts.python_version is version('3', '<')\n\
         - debug: msg=\"{{ ansible_facts['python']['executable'] }}\"\n",
    )];
    let plan = planned(&files, &PlanOptions::default());
    let t = tasks(&plan);
    assert_eq!(t.len(), 2, "neither task folds away");
    assert_eq!(
        t[0].when.as_deref(),
        Some("ansible_facts.python_version is version('3', '<')")
    );
    assert_eq!(t[1].deferred, vec!["msg".to_string()]);
}
