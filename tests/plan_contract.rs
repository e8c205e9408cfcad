//! The planner's contract on the project's own recipes and roles (issue: planner), and on the
//! site's playbook as the site runs it today.

use crate::common;

use std::path::Path;

use common::{imgbuild, imgbuild_env, repo_root, stderr, stdout};
use serde_json::{json, Value};

fn plan_json(dir: &Path, image: &str, extra: &[&str]) -> Value {
    let mut args = vec!["plan", image, "--json"];
    args.extend_from_slice(extra);
    let out = imgbuild(dir, &args);
    assert!(
        out.status.success(),
        "plan {image} failed: {}",
        stderr(&out)
    );
    serde_json::from_slice(&out.stdout).expect("plan JSON")
}

fn tasks(plan: &Value) -> Vec<Value> {
    fn walk(steps: &[Value], out: &mut Vec<Value>) {
        for step in steps {
            if step.get("block").is_some() {
                for key in ["block", "rescue", "always"] {
                    walk(
                        step[key].as_array().map(Vec::as_slice).unwrap_or_default(),
                        out,
                    );
                }
            } else {
                out.push(step.clone());
            }
        }
    }
    let mut out = Vec::new();
    walk(plan["tasks"].as_array().expect("tasks"), &mut out);
    out
}

fn find<'a>(tasks: &'a [Value], role: &str, name: &str) -> &'a Value {
    tasks
        .iter()
        .find(|t| t["role"] == role && t["name"] == name)
        .unwrap_or_else(|| panic!("no task '{name}' in role {role}"))
}

fn images() -> Vec<String> {
    let out = imgbuild(&repo_root(), &["list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).expect("list JSON");
    list.as_array()
        .expect("array")
        .iter()
        .map(|r| r["image"].as_str().expect("image").to_owned())
        .collect()
}

#[test]
fn rocky_8_10_mofed_download_and_install_are_resolved() {
    let plan = plan_json(&repo_root(), "rocky-8.10-compute", &[]);
    let tasks = tasks(&plan);
    let download = find(&tasks, "mofed", "download mofed package");
    assert_eq!(download["module"], "get_url");
    assert_eq!(
        download["args"]["url"],
        "http://core014.inband/mellanox/rocky8/MLNX_OFED_LINUX-23.10-5.1.4.0-rhel8.10-x86_64.tgz"
    );
    assert_eq!(
        download["args"]["dest"],
        "/tmp/MLNX_OFED_LINUX-23.10-5.1.4.0-rhel8.10-x86_64.tgz"
    );
    assert_eq!(download["args"]["force"], false);
    assert_eq!(download["tags"], json!(["build"]));
    assert_eq!(download["when"], Value::Null);
    assert_eq!(download["source"], "roles/mofed/tasks/Rocky.yml:7");
    let install = find(&tasks, "mofed", "install mofed");
    assert_eq!(install["module"], "shell");
    assert_eq!(
        install["args"]["chdir"],
        "/tmp/MLNX_OFED_LINUX-23.10-5.1.4.0-rhel8.10-x86_64"
    );
    let cmd = install["args"]["cmd"].as_str().expect("cmd");
    assert!(cmd.contains("--distro rhel8.10 "), "{cmd}");
    assert!(
        cmd.contains("--kernel 4.18.0-553.56.1.el8_10.x86_64 "),
        "{cmd}"
    );
    assert!(
        cmd.contains("--kernel-sources /lib/modules/4.18.0-553.56.1.el8_10.x86_64/build"),
        "{cmd}"
    );
    assert_eq!(
        plan["facts"]["ansible_kernel"],
        "4.18.0-553.56.1.el8_10.x86_64"
    );
    assert_eq!(plan["vars"]["mirror_server"], "http://core014.inband/");
}

#[test]
fn ubuntu_22_04_mofed_removes_conflicts_and_services_are_set() {
    let plan = plan_json(&repo_root(), "ubuntu-22.04-compute", &[]);
    let tasks = tasks(&plan);
    let download = find(&tasks, "mofed", "download mofed package");
    assert_eq!(download["args"]["url"], "http://core014.inband/mellanox/ubuntu22/MLNX_OFED_LINUX-24.10-2.1.8.0-ubuntu22.04-x86_64.tgz");
    let remove = find(&tasks, "mofed", "remove conflicting packages");
    assert_eq!(remove["module"], "package");
    assert_eq!(remove["args"]["state"], "absent");
    assert_eq!(
        remove["args"]["name"],
        json!(["librbd1", "librados2", "fio", "librdmacm1t64"])
    );
    let install = find(&tasks, "mofed", "install mofed");
    assert!(install["args"]["cmd"]
        .as_str()
        .expect("cmd")
        .contains("--distro ubuntu22.04 --skip-repo --kernel 6.8.0-1019-nvidia"));
    let openibd = find(&tasks, "openibd", "enable openibd");
    assert_eq!(
        (openibd["module"].clone(), openibd["args"].clone()),
        (
            json!("systemd"),
            json!({"name": "openibd", "enabled": true})
        )
    );
    let opensmd = find(&tasks, "openibd", "disable opensmd");
    assert_eq!(
        opensmd["args"],
        json!({"name": "opensmd", "enabled": false})
    );
}

#[test]
fn matrix_json_is_the_sites_matrix() {
    let out = imgbuild(&repo_root(), &["matrix", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Value = serde_json::from_slice(&out.stdout).expect("matrix JSON");
    let row = |image: &str, os: &str, version: &str, kernel: &str, mofed: &str| json!({"image": image, "os": os, "os_version": version, "kernel": kernel, "mofed": mofed, "doca": null, "nvidia": "580.65.06", "nvidia_kernel_flavor": "proprietary"});
    // Debian's image takes the driver Debian ships (non-free), the others NVIDIA's installer.
    let mut debian = row(
        "debian-12-compute",
        "Debian",
        "12",
        "6.1.0-50-amd64",
        "24.10-2.1.8.0",
    );
    debian["nvidia"] = json!("535.261.03");
    assert_eq!(
        rows,
        json!([
            debian,
            row(
                "rocky-8.10-compute",
                "Rocky",
                "8.10",
                "4.18.0-553.56.1.el8_10.x86_64",
                "23.10-5.1.4.0"
            ),
            row(
                "rocky-8.10-debug",
                "Rocky",
                "8.10",
                "4.18.0-553.56.1.el8_10.x86_64",
                "24.10-2.1.8.0"
            ),
            row(
                "rocky-8.10-login",
                "Rocky",
                "8.10",
                "4.18.0-553.56.1.el8_10.x86_64",
                "24.10-2.1.8.0"
            ),
            row(
                "rocky-9.5-compute",
                "Rocky",
                "9.5",
                "5.14.0-503.40.1.el9_5.x86_64",
                "24.10-2.1.8.0"
            ),
            row(
                "ubuntu-22.04-compute",
                "Ubuntu",
                "22.04",
                "6.8.0-1019-nvidia",
                "24.10-2.1.8.0"
            ),
            row(
                "ubuntu-24.04-compute",
                "Ubuntu",
                "24.04",
                "6.8.0-31-generic",
                "24.10-2.1.8.0"
            ),
        ])
    );
}

#[test]
fn no_plan_mentions_uname_and_every_task_has_a_real_source_line() {
    let root = repo_root();
    let names = images();
    assert_eq!(names.len(), 7);
    for image in names {
        let plan = plan_json(&root, &image, &[]);
        let text = plan.to_string();
        assert!(!text.contains("uname"), "{image}: the plan mentions uname");
        assert_eq!(plan["warnings"], json!([]), "{image}: unexpected warnings");
        for task in tasks(&plan) {
            let source = task["source"].as_str().expect("source");
            let (path, line) = source
                .rsplit_once(':')
                .unwrap_or_else(|| panic!("{image}: source without line: {source}"));
            let line: usize = line
                .parse()
                .unwrap_or_else(|_| panic!("{image}: bad line in {source}"));
            let file = std::fs::read_to_string(root.join(path))
                .unwrap_or_else(|_| panic!("{image}: {path} unreadable"));
            let lines = file.lines().count();
            assert!(
                line >= 1 && line <= lines,
                "{image}: {source} is past the end ({lines} lines)"
            );
            let name = task["name"].as_str().expect("name");
            let text_at = file.lines().nth(line - 1).unwrap_or_default();
            // The build-only step's task is where the recipe names the packages.
            let build_only = task["module"] == "imgbuild_remove_build_only"
                && text_at.contains("build_only_packages:");
            let named_here = build_only
                || file.lines().skip(line - 1).take(3).any(|l| {
                    l.contains("name:") || l.contains(task["module"].as_str().unwrap_or("?"))
                });
            assert!(
                named_here,
                "{image}: {source} ('{text_at}') is not the start of task '{name}'"
            );
        }
    }
}

#[test]
fn the_sites_own_playbook_plans_unchanged() {
    let site = repo_root().join("tests/fixtures/site-playbook");
    let rocky = plan_json(&site, "rocky-8.10-compute", &[]);
    let t = tasks(&rocky);
    assert_eq!(
        find(&t, "mofed", "download mofed package")["args"]["url"],
        "http://core014.inband/mellanox/rocky8/MLNX_OFED_LINUX-23.10-5.1.4.0-rhel8.10-x86_64.tgz"
    );
    assert_eq!(
        find(&t, "mofed", "download mofed package")["source"],
        "roles/mofed/tasks/Rocky.yml:7"
    );
    let ubuntu = plan_json(&site, "ubuntu-22.04-compute", &[]);
    let t = tasks(&ubuntu);
    assert_eq!(t.len(), 6);
    assert_eq!(
        find(&t, "mofed", "enable openibd service")["args"]["cmd"],
        "systemctl enable openibd"
    );
    assert_eq!(
        find(&t, "mofed", "disable opensmd service")["args"]["cmd"],
        "systemctl disable opensmd"
    );
}

#[test]
fn extra_vars_win_over_the_recipe() {
    let plan = plan_json(
        &repo_root(),
        "rocky-9.5-compute",
        &[
            "-e",
            "mofed_version=25.01-0.6.0.0",
            "-e",
            "{\"nvidia_version\": \"575.57.08\"}",
        ],
    );
    let t = tasks(&plan);
    assert_eq!(
        find(&t, "mofed", "download mofed package")["args"]["url"],
        "http://core014.inband/mellanox/rocky9/MLNX_OFED_LINUX-25.01-0.6.0.0-rhel9.5-x86_64.tgz"
    );
    assert_eq!(
        find(&t, "nvidia", "download the driver installer")["args"]["url"],
        "http://core014.inband/nvidia/NVIDIA-Linux-x86_64-575.57.08.run"
    );
    let mirrored = plan_json(
        &repo_root(),
        "rocky-9.5-compute",
        &["--mirror", "http://127.0.0.1:8080/"],
    );
    let t = tasks(&mirrored);
    assert_eq!(
        find(&t, "nvidia", "download the driver installer")["args"]["url"],
        "http://127.0.0.1:8080/nvidia/NVIDIA-Linux-x86_64-580.65.06.run"
    );
}

#[test]
fn tags_select_tasks() {
    let root = repo_root();
    let all = tasks(&plan_json(&root, "rocky-9.5-compute", &[])).len();
    assert!(all > 40, "{all}");
    assert_eq!(
        tasks(&plan_json(&root, "rocky-9.5-compute", &["--tags", "build"])).len(),
        all
    );
    assert_eq!(
        tasks(&plan_json(
            &root,
            "rocky-9.5-compute",
            &["--skip-tags", "build"]
        ))
        .len(),
        0
    );
    // A tag no task has: see an_unknown_tag_names_the_tags_there_are.
}

#[test]
fn human_plan_is_a_tree_with_resolved_commands() {
    let out = imgbuild(&repo_root(), &["plan", "rocky-8.10-compute"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("rocky-8.10-compute: Rocky 8.10, kernel 4.18.0-553.56.1.el8_10.x86_64,"),
        "{text}"
    );
    assert!(text.contains("\nmofed\n"));
    assert!(
        text.contains("$ ./mlnxofedinstall --distro rhel8.10"),
        "{text}"
    );
    assert!(text.contains("http://core014.inband/mellanox/rocky8/MLNX_OFED_LINUX-23.10-5.1.4.0-rhel8.10-x86_64.tgz -> /tmp/"));
}

#[test]
fn usage_errors_exit_2_and_completions_print() {
    let root = repo_root();
    let out = imgbuild(&root, &["plan"]);
    assert_eq!(out.status.code(), Some(2));
    let out = imgbuild(&root, &["matrix", "--format", "xml"]);
    assert_eq!(out.status.code(), Some(2));
    let out = imgbuild(&root, &["completions", "bash"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("imgbuild"));
    let out = imgbuild(&root, &["plan", "--help"]);
    assert!(stdout(&out).contains("--skip-tags"));
}

#[test]
fn matrix_markdown_and_csv_have_every_image() {
    for format in ["markdown", "csv", "table"] {
        let out = imgbuild(&repo_root(), &["matrix", "--format", format]);
        assert!(out.status.success());
        let text = stdout(&out);
        for image in images() {
            assert!(text.contains(&image), "{format} lacks {image}");
        }
    }
}

#[test]
fn every_image_has_one_typed_intent_and_a_missing_pin_is_a_located_error() {
    for image in images() {
        let plan = plan_json(&repo_root(), &image, &[]);
        let intent = &plan["intent"];
        let kernel = intent["kernel"].as_str().expect("kernel");
        assert_eq!(plan["facts"]["ansible_kernel"], kernel, "{image}");
        assert!(!kernel.contains("{{"), "{image}: {kernel}");
        assert!(intent["mofed"].is_string(), "{image}: {intent}");
        assert!(intent["nvidia"].is_string(), "{image}: {intent}");
    }
    // A recipe that pins no kernel and installs none has no kernel, never its template.
    let dir = tempfile::tempdir().expect("tempdir");
    let images = dir.path().join("images");
    std::fs::create_dir_all(dir.path().join("roles/kernel/tasks")).expect("roles");
    std::fs::write(
        dir.path().join("roles/kernel/tasks/main.yml"),
        "- name: noop\n  debug:\n    msg: hi\n",
    )
    .expect("role");
    std::fs::create_dir_all(&images).expect("images");
    let play = "- hosts: all\n  vars:\n    bootstrap: debootstrap\n    build_from: bookworm\n";
    std::fs::write(images.join("plain.yml"), format!("{play}  roles: []\n")).expect("plain");
    let plan = plan_json(dir.path(), "plain", &[]);
    assert_eq!(plan["intent"]["kernel"], Value::Null);
    assert_eq!(
        plan["facts"].get("ansible_kernel"),
        None,
        "{}",
        plan["facts"]
    );
    // A kernel role without kernel_version: the error names the recipe line of the role.
    std::fs::write(
        images.join("unpinned.yml"),
        format!("{play}  roles:\n    - kernel\n"),
    )
    .expect("unpinned");
    let out = imgbuild(dir.path(), &["plan", "unpinned"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("images/unpinned.yml:6")
            && stderr(&out).contains("sets no kernel_version"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_nvidia_kernel_flavor_is_the_recipes_or_the_roles_default() {
    let root = repo_root();
    let installer = |plan: &Value| {
        let tasks = tasks(plan);
        let task = find(
            &tasks,
            "nvidia",
            "build and install the driver for the pinned kernel",
        );
        task["args"]["cmd"].as_str().unwrap_or_default().to_owned()
    };
    // The role's default: the proprietary modules, passed to NVIDIA's installer as it names them.
    let plan = plan_json(&root, "rocky-9.5-compute", &[]);
    assert_eq!(plan["intent"]["nvidia_kernel_flavor"], "proprietary");
    assert!(installer(&plan).contains("--kernel-module-type=proprietary"));
    // A site that moves to the open modules says so once.
    let plan = plan_json(
        &root,
        "rocky-9.5-compute",
        &["-e", "nvidia_kernel_flavor=open"],
    );
    assert_eq!(plan["intent"]["nvidia_kernel_flavor"], "open");
    assert!(installer(&plan).contains("--kernel-module-type=open"));
    // Debian: the open modules come from contrib's nvidia-open-kernel-dkms.
    let plan = plan_json(
        &root,
        "debian-12-compute",
        &["-e", "nvidia_kernel_flavor=open"],
    );
    let apt = find(
        &tasks(&plan),
        "nvidia",
        "the driver, pinned, built by DKMS for the pinned kernel",
    )
    .clone();
    let names = apt["args"]["name"].to_string();
    assert!(names.contains("nvidia-open-kernel-dkms=535"), "{names}");
    assert!(!names.contains("\"nvidia-kernel-dkms"), "{names}");
    // Anything else is refused, naming the value and the two there are.
    let out = imgbuild(
        &root,
        &[
            "plan",
            "rocky-9.5-compute",
            "-e",
            "nvidia_kernel_flavor=closed",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nvidia_kernel_flavor must be open")
            && stderr(&out).contains("'closed'"),
        "{}",
        stderr(&out)
    );
    // An image without the nvidia role has no flavour.
    for image in images() {
        let plan = plan_json(&root, &image, &[]);
        let has_role = plan["roles"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r == "nvidia"));
        assert_eq!(
            plan["intent"].get("nvidia_kernel_flavor").is_some(),
            has_role,
            "{image}"
        );
    }
}

#[test]
fn a_closed_pipe_ends_quietly_as_sigpipe_would() {
    // The reader is gone before imgbuild prints (planning takes far longer than the drop).
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_imgbuild"))
        .arg("-C")
        .arg(repo_root())
        .args(["plan", "rocky-9.5-compute", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(141), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}

#[test]
fn an_unknown_tag_names_the_tags_there_are() {
    let out = imgbuild(
        &repo_root(),
        &["plan", "rocky-9.5-compute", "--tags", "nosuchtag"],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "nothing left to run: {}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("no task has the tag 'nosuchtag'; the recipe's tags are: build"),
        "{}",
        stderr(&out)
    );
    let out = imgbuild(
        &repo_root(),
        &["plan", "rocky-9.5-compute", "--tags", "build,nosuchtag"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("warning: images/rocky-9.5-compute.yml: no task has the tag 'nosuchtag'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn cache_list_names_its_columns() {
    let cache = tempfile::tempdir().expect("cache");
    let out = imgbuild_env(
        &repo_root(),
        &["cache", "list"],
        &[("IMGBUILD_CACHE", cache.path())],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let header: Vec<&str> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split("  ")
        .filter(|c| !c.trim().is_empty())
        .map(str::trim)
        .collect();
    assert_eq!(
        header,
        ["KEY", "SIZE", "LAYER DIGEST", "TOOK", "BUILT (UTC)"],
        "{text}"
    );
    assert!(
        text.lines()
            .last()
            .unwrap_or_default()
            .starts_with("0 layers in "),
        "{text}"
    );
}

#[test]
fn an_output_warewulf_cannot_import_is_refused_before_any_work() {
    let dir = tempfile::tempdir().expect("out");
    let out = dir.path().join("a:b");
    let result = imgbuild(
        &repo_root(),
        &[
            "build",
            "debian-12-compute",
            "--out",
            &out.to_string_lossy(),
        ],
    );
    assert_eq!(result.status.code(), Some(2), "{}", stderr(&result));
    assert!(
        stderr(&result).contains("must not contain ':'"),
        "{}",
        stderr(&result)
    );
    assert!(!out.exists(), "refused before anything was written");
}

#[test]
fn verify_of_a_folder_that_is_no_image_says_so() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("notes.txt"), "not an image\n").expect("file");
    let out = imgbuild(&repo_root(), &["verify", &dir.path().to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("is no image"), "{}", stderr(&out));
}

/// A role's command lookup names the role's own file by `role_path`, and runs in the
/// playbook's folder: the project is given as `-C` with a relative path, as a site's CI may.
#[test]
fn a_pipe_command_finds_role_path_with_a_relative_project_folder() {
    let work = tempfile::tempdir().expect("tempdir");
    let project = work.path().join("site");
    for (path, body) in [
        (
            "images/t.yml",
            "- hosts: localhost\n  vars:\n    bootstrap: debootstrap\n    build_from: bookworm\n    kernel_version: \"6.1.0-50-amd64\"\n  roles: [r]\n",
        ),
        (
            "roles/r/tasks/main.yml",
            "- copy:\n    dest: /etc/word\n    content: \"{{ lookup('pipe', 'cat ' ~ role_path ~ '/files/word') }}\"\n",
        ),
        ("roles/r/files/word", "from the role\n"),
    ] {
        let file = project.join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(file, body).expect("write");
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_imgbuild"))
        .current_dir(work.path())
        .args(["-C", "site", "plan", "t", "--json"])
        .output()
        .expect("run imgbuild");
    assert!(out.status.success(), "{}", stderr(&out));
    let plan: Value = serde_json::from_slice(&out.stdout).expect("plan JSON");
    let tasks = tasks(&plan);
    let copy = tasks
        .iter()
        .find(|t| t["module"] == "copy")
        .expect("the copy task");
    assert_eq!(copy["args"]["content"], "from the role", "{copy:#}");
}
