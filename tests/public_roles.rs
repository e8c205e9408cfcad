//! Roles written in the style of public HPC roles (an OFED/DOCA install with `include_vars` and
//! `with_first_found`, a CUDA repository with `rpm_key`, `yum_repository` and `dnf` or apt's
//! equivalents, NHC with `with_fileglob`, `find` and `replace`, chrony with handlers and
//! `meta: flush_handlers`): each plans for Rocky 9 and Ubuntu 22.04, and runs in a Debian rootfs.

use crate::common;

use common::*;
use serde_json::Value;

fn plan(image: &str) -> Value {
    let dir = repo_root().join("tests/fixtures/public-style");
    let out = imgbuild(&dir, &["--json", "plan", image]);
    assert!(out.status.success(), "{image}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("plan JSON")
}

/// `plan --role` of a role folder of this repository for `os`, as JSON.
fn plan_role(role: &str, os: &str) -> Value {
    let role = repo_root().join(role);
    let out = imgbuild(
        &repo_root(),
        &[
            "--json",
            "plan",
            "--role",
            &role.to_string_lossy(),
            "--os",
            os,
        ],
    );
    assert!(out.status.success(), "{}: {}", role.display(), stderr(&out));
    serde_json::from_slice(&out.stdout).expect("plan JSON")
}

fn tasks<'a>(plan: &'a Value, role: &str) -> Vec<&'a Value> {
    plan["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .flat_map(|t| match t["block"].as_array() {
            Some(block) => block.iter().collect::<Vec<_>>(),
            None => vec![t],
        })
        .filter(|t| t["role"] == role)
        .collect()
}

fn modules(plan: &Value, role: &str) -> Vec<String> {
    tasks(plan, role)
        .iter()
        .filter_map(|t| t["module"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn they_plan_for_rocky_9_and_ubuntu_22_04() {
    let rocky = plan("rocky9");
    let ubuntu = plan("ubuntu22");

    // include_vars + with_first_found picks the distribution's file.
    let vars_file = |p: &Value| {
        tasks(p, "doca")[0]["args"]["file"]
            .as_str()
            .map(str::to_owned)
    };
    assert_eq!(
        vars_file(&rocky).as_deref(),
        Some("roles/doca/vars/Rocky-9.yml")
    );
    assert_eq!(
        vars_file(&ubuntu).as_deref(),
        Some("roles/doca/vars/Ubuntu-22.yml")
    );
    let recorded = |p: &Value, role: &str| {
        tasks(p, role)[2]["args"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        recorded(&rocky, "doca").contains("/doca/2.9.1/rhel9.5/x86_64\ndoca-ofed mlnx-fw-updater")
    );
    assert!(recorded(&ubuntu, "doca").contains("/doca/2.9.1/ubuntu2204/x86_64\ndoca-ofed"));

    // The CUDA repository takes each family's own modules.
    assert_eq!(
        modules(&rocky, "cuda_repo"),
        ["rpm_key", "yum_repository", "dnf"]
    );
    assert_eq!(
        modules(&ubuntu, "cuda_repo"),
        ["apt_key", "deb822_repository"]
    );
    let key = &tasks(&rocky, "cuda_repo")[0]["args"]["key"];
    assert_eq!(
        key,
        "http://mirror.site.test/cuda/rhel9/x86_64/D42D0685.pub"
    );

    // with_fileglob finds the role's files; find and replace follow.
    for p in [&rocky, &ubuntu] {
        assert_eq!(
            modules(p, "nhc"),
            ["file", "copy", "copy", "find", "replace"],
            "{p:#}"
        );
        assert_eq!(
            modules(p, "chrony_site"),
            ["set_fact", "template", "meta", "stat", "assert", "wait_for", "sysctl", "copy"]
        );
    }
}

#[test]
fn they_run_in_a_debian_rootfs() {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-public-roles-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let root = work.path().join("root");
    bookworm_rootfs(&root);
    let dir = repo_root().join("tests/fixtures/public-style");
    let root_arg = root.to_string_lossy().into_owned();
    // --check changes nothing, and roles see ansible_check_mode true.
    let check = imgbuild(&dir, &["apply", "debian12", "--root", &root_arg, "--check"]);
    assert!(check.status.success(), "{}", stderr(&check));
    assert!(
        !stderr(&check).contains("a marker only real runs write"),
        "{}",
        stderr(&check)
    );
    assert!(!root.join("etc/doca-repo.txt").exists());
    let out = imgbuild(&dir, &["apply", "debian12", "--root", &root_arg]);
    assert!(out.status.success(), "{}", stderr(&out));
    let read =
        |p: &str| std::fs::read_to_string(root.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));

    assert!(
        read("etc/doca-repo.txt").starts_with("http://mirror.site.test//doca/2.9.1/generic/x86_64")
    );
    assert_eq!(read("etc/modules-load.d/mlx5_ib.conf"), "mlx5_ib\n");
    assert!(read("etc/security/limits.conf").contains("*\t-\tmemlock\tunlimited\n"));
    let sources = read("etc/apt/sources.list.d/cuda.sources");
    assert!(
        sources.contains("URIs: http://mirror.site.test/cuda/debian12/x86_64/\n"),
        "{sources}"
    );
    assert!(sources.contains("Signed-By: /usr/share/keyrings/cuda.asc\n"));
    assert!(read("usr/share/keyrings/cuda.asc").contains("stand-in key"));
    for conf in ["nhc.conf", "scratch.conf"] {
        let text = read(&format!("etc/nhc/conf.d/{conf}"));
        assert!(
            text.contains("check_hw_ib 200") && !text.contains("check_hw_ib 100"),
            "{text}"
        );
    }
    assert!(read("etc/chrony.conf").contains("server ntp2.site.test iburst"));
    assert_eq!(read("etc/chrony.reloaded"), "reloaded\n");
    assert_eq!(read("etc/real-run"), "real\n");
    assert_eq!(
        read("etc/sysctl.d/99-imgbuild.conf"),
        "kernel.sched_rt_runtime_us = -1\n"
    );
    let err = stderr(&out);
    assert!(err.contains("wait_for skipped"), "{err}");
    assert!(
        err.contains("never loads a module into the build host's kernel"),
        "{err}"
    );

    // A second run changes nothing in the roles whose tasks do not undo each other.
    let again = imgbuild(&dir, &["apply", "debian12", "--root", &root_arg]);
    assert!(again.status.success(), "{}", stderr(&again));
    let again = stderr(&again);
    for role in ["doca", "cuda_repo", "chrony_site"] {
        assert!(
            again
                .lines()
                .any(|l| l.starts_with(&format!("== {role}:")) && l.contains(" 0 changed")),
            "{role} changed on a second run:\n{again}"
        );
    }
}

#[test]
fn lint_names_what_an_image_build_does_differently() {
    let dir = repo_root().join("tests/fixtures/public-style");
    let out = imgbuild(&dir, &["lint", "rocky9"]);
    assert_eq!(out.status.code(), Some(1), "findings exit 1");
    let text = stdout(&out);
    assert!(
        text.contains("roles/chrony_site/tasks/main.yml:23: wait_for is skipped"),
        "{text}"
    );
    assert!(
        text.contains("sysctl kernel.sched_rt_runtime_us is written to the image"),
        "{text}"
    );
    let clean = imgbuild(&repo_root(), &["lint"]);
    assert_eq!(clean.status.code(), Some(0), "{}", stdout(&clean));
}

#[test]
fn a_downloaded_role_plans_alone_for_each_os() {
    let role = repo_root().join("tests/fixtures/public-style/roles/doca");
    let role = role.to_string_lossy().into_owned();
    for (os, file) in [
        ("rocky-9.5", "Rocky-9.yml"),
        ("ubuntu-22.04", "Ubuntu-22.yml"),
        ("debian-12", "default.yml"),
    ] {
        let out = imgbuild(
            &repo_root(),
            &[
                "--json",
                "plan",
                "--role",
                &role,
                "--os",
                os,
                "-e",
                "mirror_server=http://m/",
            ],
        );
        assert!(out.status.success(), "{os}: {}", stderr(&out));
        let plan: Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(
            plan["tasks"][0]["args"]["file"],
            format!("roles/doca/vars/{file}"),
            "{os}"
        );
    }
    let bad = imgbuild(
        &repo_root(),
        &["plan", "--role", &role, "--os", "windows-11"],
    );
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_role_alone_is_planned_for_the_kernel_the_projects_matrix_pins() {
    // The project's rocky-9.5 image pins another kernel than the built-in default: the role
    // is planned for the project's.
    let work = tempfile::tempdir().expect("tempdir");
    for dir in ["images", "roles"] {
        let status = std::process::Command::new("cp")
            .arg("-a")
            .arg(repo_root().join(dir))
            .arg(work.path())
            .status()
            .expect("cp");
        assert!(status.success());
    }
    let recipe = work.path().join("images/rocky-9.5-compute.yml");
    let text = std::fs::read_to_string(&recipe).expect("recipe");
    let pinned = "5.14.0-611.5.1.el9_7.x86_64";
    std::fs::write(
        &recipe,
        text.replace("5.14.0-503.40.1.el9_5.x86_64", pinned),
    )
    .expect("recipe");
    let role = work
        .path()
        .join("roles/kernel")
        .to_string_lossy()
        .into_owned();
    let out = imgbuild(
        work.path(),
        &["--json", "plan", "--role", &role, "--os", "rocky-9.5"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let plan: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(plan["intent"]["kernel"], pinned, "{plan:#}");
}

#[test]
fn a_role_that_pins_its_own_version_gives_the_image_that_version() {
    // The recipe (here, plan --role's) sets no mofed_version; the role's default is what it
    // installs, so it is the image's MOFED.
    let plan = plan_role("tests/fixtures/role-pins/mofed", "ubuntu-22.04");
    assert_eq!(plan["intent"]["mofed"], "5.6-2.0.9.0");
    assert_eq!(
        plan["tasks"][0]["args"]["msg"],
        "MLNX_OFED_LINUX-5.6-2.0.9.0"
    );
}

#[test]
fn a_downloaded_role_finds_its_dependencies_beside_it() {
    // As Ansible looks for a dependency beside the role that names it first (deepops' roles
    // depend on their sibling `facts`).
    let plan = plan_role(
        "tests/fixtures/ansible-diff/roles/role_dependencies",
        "debian-12",
    );
    let sources: Vec<&str> = plan["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter_map(|t| t["source"].as_str())
        .collect();
    for sibling in ["roles/_dep_base/", "roles/_dep_again/"] {
        assert!(
            sources.iter().any(|s| s.starts_with(sibling)),
            "no task of {sibling} in {sources:?}"
        );
    }
}

#[test]
fn keywords_for_a_running_host_plan_with_a_note() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("images")).expect("mkdir");
    std::fs::create_dir_all(dir.path().join("roles/r/tasks")).expect("mkdir");
    std::fs::write(
        dir.path().join("images/i.yml"),
        "- hosts: all\n  vars: {kernel_version: \"6.1.0-50-amd64\"}\n  facts: {distribution: Debian, distribution_version: \"12\"}\n  roles: [r]\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("roles/r/tasks/main.yml"),
        "- shell: make -j\n  async: 3600\n  poll: 10\n  run_once: true\n  any_errors_fatal: true\n- command: 'true'\n  connection: local\n",
    )
    .expect("write");
    let out = imgbuild(dir.path(), &["plan", "i"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "roles/r/tasks/main.yml:1: async: the task runs to its end before the next one starts"
        ),
        "{err}"
    );
    assert!(
        err.contains("roles/r/tasks/main.yml:6: connection is ignored"),
        "{err}"
    );
}
