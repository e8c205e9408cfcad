//! DOCA-OFED planned (issue 33): a recipe's `doca_version` in place of `mofed_version` chooses
//! the mofed role's DOCA path, for each DOCA generation (the kernel-support repository up to
//! 3.1, DKMS from 3.2), on Rocky, Ubuntu and Debian; the intent and the matrix carry it.

use crate::common;

use std::path::Path;

use common::{imgbuild, repo_root, stderr};
use serde_json::Value;

fn plan(dir: &Path, image: &str, extra: &[&str]) -> Value {
    let mut args = vec!["plan", image, "--json"];
    args.extend_from_slice(extra);
    let out = imgbuild(dir, &args);
    assert!(out.status.success(), "plan {image}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("plan JSON")
}

/// The mofed role's tasks: (name, module, source file, arguments).
fn mofed_tasks(plan: &Value) -> Vec<(String, String, String, Value)> {
    fn walk(steps: &[Value], out: &mut Vec<(String, String, String, Value)>) {
        for step in steps {
            if step.get("block").is_some() {
                walk(
                    step["block"]
                        .as_array()
                        .map(Vec::as_slice)
                        .unwrap_or_default(),
                    out,
                );
            } else if step["role"] == "mofed" {
                out.push((
                    step["name"].as_str().unwrap_or_default().to_owned(),
                    step["module"].as_str().unwrap_or_default().to_owned(),
                    step["source"].to_string(),
                    step["args"].clone(),
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(plan["tasks"].as_array().expect("tasks"), &mut out);
    out
}

fn names(tasks: &[(String, String, String, Value)]) -> Vec<&str> {
    tasks.iter().map(|t| t.0.as_str()).collect()
}

#[test]
fn doca_up_to_3_1_builds_the_kernel_support_repository_for_the_pinned_kernel() {
    let plan = plan(
        &repo_root(),
        "rocky-9.5-compute",
        &["-e", "doca_version=3.1.0"],
    );
    assert_eq!(plan["intent"]["doca_version"], "3.1.0");
    assert_eq!(plan["intent"]["mofed"], Value::Null, "{}", plan["intent"]);
    let kernel = plan["intent"]["kernel"]
        .as_str()
        .expect("kernel")
        .to_owned();
    let tasks = mofed_tasks(&plan);
    assert_eq!(
        names(&tasks),
        [
            "the DOCA repository's signing key",
            "the DOCA repository",
            "doca-kernel-support (DOCA up to 3.1)",
            "build the kernel packages for the pinned kernel",
            "add the local repository of kernel packages",
            "install doca-ofed",
        ],
        "{tasks:#?}"
    );
    assert!(tasks
        .iter()
        .all(|t| t.2.contains("roles/mofed/tasks/doca-Rocky.yml")));
    // The site's repository under its mirror, as NVIDIA lays it out, and the pinned kernel.
    let repo = &tasks[1].3;
    assert_eq!(
        repo["baseurl"][0], "http://core014.inband/doca/3.1.0/rhel9.5/x86_64/",
        "{repo}"
    );
    assert_eq!(
        tasks[0].3["key"],
        "http://core014.inband/doca/3.1.0/rhel9.5/x86_64/GPG-KEY-Mellanox.pub"
    );
    assert_eq!(
        tasks[3].3["argv"],
        serde_json::json!(["/opt/mellanox/doca/tools/doca-kernel-support", "-k", kernel])
    );
}

#[test]
fn doca_from_3_2_runs_dkms_for_the_pinned_kernel_and_checks_every_module() {
    for (image, os, file) in [
        ("ubuntu-24.04-compute", "ubuntu24.04", "doca-apt.yml"),
        ("debian-12-compute", "debian12", "doca-apt.yml"),
        ("rocky-8.10-compute", "rhel8.10", "doca-Rocky.yml"),
    ] {
        let plan = plan(&repo_root(), image, &["-e", "doca_version=3.2.1"]);
        let kernel = plan["intent"]["kernel"]
            .as_str()
            .expect("kernel")
            .to_owned();
        let tasks = mofed_tasks(&plan);
        assert_eq!(
            names(&tasks),
            [
                "the DOCA repository's signing key",
                "the DOCA repository",
                "install doca-ofed",
                "build DOCA's DKMS modules for the pinned kernel",
                "every DKMS module is installed for the pinned kernel",
                "no DKMS signing key in the image",
            ],
            "{image}: {tasks:#?}"
        );
        assert!(
            tasks.iter().all(|t| t.2.contains(file)),
            "{image}: {tasks:#?}"
        );
        assert!(
            tasks[1]
                .3
                .to_string()
                .contains(&format!("/doca/3.2.1/{os}/x86_64/")),
            "{image}: {}",
            tasks[1].3
        );
        assert_eq!(
            tasks[3].3["argv"],
            serde_json::json!(["dkms", "autoinstall", "-k", kernel]),
            "{image}"
        );
        assert_eq!(
            tasks[4].3["argv"],
            serde_json::json!(["dkms", "status", "-k", kernel]),
            "{image}"
        );
    }
}

#[test]
fn the_matrix_shows_doca_where_a_recipe_chose_it_and_a_recipe_without_either_pin_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    for part in ["images", "roles", "mirror.toml"] {
        let status = std::process::Command::new("cp")
            .arg("-a")
            .arg(repo_root().join(part))
            .arg(dir.path())
            .status()
            .expect("cp");
        assert!(status.success());
    }
    // A site moves an image to DOCA: doca_version in place of mofed_version, then `matrix set`
    // moves it to another DOCA release as it moves any pin.
    let recipe = dir.path().join("images/ubuntu-22.04-compute.yml");
    let text = std::fs::read_to_string(&recipe).expect("recipe");
    let mofed_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("mofed_version:"))
        .expect("a mofed_version line");
    let indent = &mofed_line[..mofed_line.len() - mofed_line.trim_start().len()];
    let doca = text.replace(mofed_line, &format!("{indent}doca_version: \"3.1.0\""));
    std::fs::write(&recipe, doca).expect("write");
    let out = imgbuild(
        dir.path(),
        &[
            "matrix",
            "set",
            "ubuntu-22.04-compute",
            "doca_version=3.2.1",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = imgbuild(dir.path(), &["matrix", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Value = serde_json::from_slice(&out.stdout).expect("matrix JSON");
    let row = |image: &str| {
        rows.as_array()
            .and_then(|r| r.iter().find(|r| r["image"] == image))
            .cloned()
            .unwrap_or_else(|| panic!("no row {image}: {rows}"))
    };
    let ubuntu = row("ubuntu-22.04-compute");
    assert_eq!(ubuntu["doca"], "3.2.1", "{ubuntu}");
    assert_eq!(
        ubuntu["mofed"],
        Value::Null,
        "the role installs DOCA, not MLNX_OFED: {ubuntu}"
    );
    let rocky = row("rocky-9.5-compute");
    assert_eq!(rocky["doca"], Value::Null, "{rocky}");
    assert!(rocky["mofed"].is_string(), "{rocky}");
    let out = imgbuild(dir.path(), &["matrix", "--format", "csv"]);
    let csv = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        csv.starts_with("image,os,os_version,kernel,mofed,doca,nvidia,"),
        "{csv}"
    );
    assert!(csv.contains(",,3.2.1,"), "{csv}");
}

#[test]
fn a_mofed_role_with_neither_pin_is_a_located_error_naming_both() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("roles/mofed/tasks")).expect("roles");
    std::fs::write(
        dir.path().join("roles/mofed/tasks/main.yml"),
        "- name: noop\n  debug:\n    msg: hi\n",
    )
    .expect("role");
    std::fs::create_dir_all(dir.path().join("images")).expect("images");
    let play = "- hosts: all\n  vars:\n    bootstrap: debootstrap\n    build_from: bookworm\n";
    for (name, var) in [("doca", "    doca_version: 3.2.1\n"), ("unpinned", "")] {
        std::fs::write(
            dir.path().join(format!("images/{name}.yml")),
            format!("{play}{var}  roles:\n    - mofed\n"),
        )
        .expect("recipe");
    }
    assert_eq!(
        plan(dir.path(), "doca", &[])["intent"]["doca_version"],
        "3.2.1"
    );
    let out = imgbuild(dir.path(), &["plan", "unpinned"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("images/unpinned.yml:6")
            && stderr(&out).contains("set vars.mofed_version or vars.doca_version"),
        "{}",
        stderr(&out)
    );
}
