//! What a module's spec says beyond its parameters, as planning applies it: what its tasks
//! download, which package manager it is for, and whether it works delegated to the controller.

use planner::{plan, Plan, PlanOptions, Project};

const ROCKY: &str = "- hosts: localhost
  become: yes
  vars:
    build_from: \"docker.io/rockylinux/rockylinux:9.5\"
    kernel_version: \"5.14.0-503.40.1.el9_5.x86_64\"
  roles: [r]
";

/// Plans role `r`'s `tasks` in a Rocky 9.5 image.
fn planned(tasks: &str) -> Result<Plan, String> {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, body) in [("images/t.yml", ROCKY), ("roles/r/tasks/main.yml", tasks)] {
        let target = dir.path().join(path);
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        std::fs::write(target, body).expect("write");
    }
    let project = Project::at(dir.path()).expect("project");
    plan(&project, "t", &PlanOptions::default()).map_err(|e| e.to_string())
}

#[test]
fn each_downloading_module_names_its_urls() {
    let plan = planned(
        "- get_url: url=https://mirror.test/a.run dest=/tmp/a.run
- rpm_key: key=https://mirror.test/RPM-GPG-KEY
- unarchive: src=https://mirror.test/b.tgz dest=/opt remote_src=yes
- dnf:
    name: [https://mirror.test/c.rpm, vim, http://mirror.test/d.rpm]
- copy: src=https://mirror.test/not-a-download dest=/tmp/e
",
    )
    .expect("plans");
    let urls: Vec<Vec<String>> = plan.all_tasks().iter().map(|t| t.download_urls()).collect();
    assert_eq!(
        urls,
        [
            vec!["https://mirror.test/a.run".to_owned()],
            vec!["https://mirror.test/RPM-GPG-KEY".to_owned()],
            vec!["https://mirror.test/b.tgz".to_owned()],
            vec![
                "https://mirror.test/c.rpm".to_owned(),
                "http://mirror.test/d.rpm".to_owned()
            ],
            vec![],
        ]
    );
    assert!(plan.all_tasks().iter().all(|t| !t.downloads_unknown_url()));
}

#[test]
fn a_url_only_the_build_knows_is_unknown_for_every_fetching_module() {
    let plan = planned(
        "- command: cat /etc/key-url
  register: where
- rpm_key:
    key: \"{{ where.stdout }}\"
- get_url:
    url: \"{{ where.stdout }}\"
    dest: /tmp/a
- unarchive:
    src: \"{{ where.stdout }}\"
    dest: /opt
",
    )
    .expect("plans");
    let unknown: Vec<(String, bool)> = plan
        .all_tasks()
        .iter()
        .map(|t| (t.module.clone(), t.downloads_unknown_url()))
        .collect();
    // unarchive's `src` is a project file unless it is a URL or remote_src says so.
    let expected = [
        ("command", false),
        ("rpm_key", true),
        ("get_url", true),
        ("unarchive", false),
    ];
    let expected: Vec<(String, bool)> = expected
        .iter()
        .map(|(m, u)| ((*m).to_owned(), *u))
        .collect();
    assert_eq!(unknown, expected);
}

#[test]
fn a_package_module_of_the_other_family_is_refused_unless_guarded() {
    let err = planned("- apt: name=vim\n").expect_err("apt in a dnf image");
    assert!(
        err.contains("module 'apt' is for apt images") && err.contains("(ansible_pkg_mgr) is dnf"),
        "{err}"
    );
    let err =
        planned("- apt_repository: repo='deb http://x/ y main'\n").expect_err("apt_repository");
    assert!(
        err.contains("module 'apt_repository' is for apt images"),
        "{err}"
    );
    planned("- apt: name=vim\n  when: ansible_pkg_mgr == 'apt'\n")
        .expect("guarded: the build decides");
    planned("- yum: name=vim\n- rpm_key: key=/etc/pki/k\n").expect("dnf's family");
}

#[test]
fn only_file_and_download_modules_work_delegated_to_the_controller() {
    planned("- get_url: url=https://mirror.test/a dest=/tmp/a\n  delegate_to: localhost\n")
        .expect("get_url works in the controller folder");
    let err = planned("- command: hostname\n  delegate_to: localhost\n").expect_err("command");
    assert!(
        err.contains("module 'command' would run on the machine running the build")
            && err.contains(
                "(assemble, blockinfile, copy, file, find, get_url, lineinfile, replace, slurp, stat, tempfile, template, unarchive, uri)"
            ),
        "{err}"
    );
}
