//! `imgbuild lint`: tasks that would have no effect, or a surprising one, in an image build:
//! services started on a host that does not run, reboots and waits, modules loaded into a
//! kernel that is not the image's, `uname` and the like, and every plan warning. It also lists,
//! without counting them as findings, the tasks whose module runs with Ansible's own code.

use std::process::ExitCode;

use planner::plan::PlannedTask;
use planner::{PlanOptions, Project};
use serde::Serialize;

use crate::Failure;

/// One finding.
#[derive(Debug, Serialize, PartialEq, Eq)]
struct Finding {
    image: String,
    source: String,
    message: String,
}

/// What a task does differently in an image build, if anything.
fn finding(task: &PlannedTask) -> Option<String> {
    let arg = |k: &str| task.args.get(k).and_then(serde_json::Value::as_str);
    match task.module.as_str() {
        "pause" | "reboot" | "wait_for" | "wait_for_connection" => Some(format!(
            "{} is skipped: an image build has no running host to wait on or reboot",
            task.module
        )),
        "modprobe" if arg("persistent") != Some("present") => Some(
            "modprobe without persistent: present has no effect: an image build never loads modules; add persistent: present so the node loads it at boot".into(),
        ),
        "sysctl" => Some(format!(
            "sysctl {} is written to the image, not applied now; later tasks of the build do not see it",
            arg("name").unwrap_or("")
        )),
        "mount" => Some("mount only writes /etc/fstab: nothing is mounted during the build".into()),
        "setup" => Some("setup gathers nothing: the facts are the recipe's, checked against the rootfs".into()),
        _ => None,
    }
}

/// Where the code of a task's module comes from when imgbuild does not implement it: the
/// machine's ansible-core or collection (`community.general 6.6.2`), or the project's file;
/// and whether ansible-playbook itself runs it (an action plugin).
fn ansible_code(task: &PlannedTask) -> Option<String> {
    if task.module != modules::role_module::MODULE {
        return None;
    }
    let module = task.args["module"].as_str().unwrap_or_default();
    let from = task.args["ansible_code"]["from"].as_str();
    let from = from.or(task.local_file.as_deref()).unwrap_or_default();
    if task.args["ansible_action"] == serde_json::Value::Bool(true) {
        return Some(format!(
            "{module} is an action plugin: ansible-playbook runs it over the chroot connection ({from})"
        ));
    }
    Some(format!("{module} runs with Ansible's own code ({from})"))
}

/// Prints the findings of `images` (all when empty); exit 1 when there are any.
pub fn run(project: &Project, images: &[String], json: bool) -> Result<ExitCode, Failure> {
    let images = if images.is_empty() {
        project.images()?
    } else {
        images.to_vec()
    };
    let mut findings = Vec::new();
    let mut through_ansible = Vec::new();
    for image in images {
        let plan = planner::plan(project, &image, &PlanOptions::default())?;
        for w in &plan.warnings {
            findings.push(Finding {
                image: image.clone(),
                source: w.source.clone(),
                message: w.message.clone(),
            });
        }
        for task in plan.all_tasks() {
            if let Some(message) = finding(task) {
                findings.push(Finding {
                    image: image.clone(),
                    source: task.source.clone(),
                    message,
                });
            }
            if let Some(message) = ansible_code(task) {
                through_ansible.push(format!("{}: {message} ({image})", task.source));
            }
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&findings).unwrap_or_default()
        );
    } else {
        for f in &findings {
            println!("{}: {} ({})", f.source, f.message, f.image);
        }
        println!("{} findings", findings.len());
        for line in &through_ansible {
            println!("{line}");
        }
        if !through_ansible.is_empty() {
            println!(
                "{} tasks run with Ansible's own code",
                through_ansible.len()
            );
        }
    }
    Ok(if findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
