//! Human-readable output: the plan as a tree of roles and tasks.

use std::fmt::Write as _;

use planner::plan::{PlannedTask, Step};
use planner::Plan;
use serde_json::Value as Json;

fn text(value: Option<&Json>) -> String {
    match value {
        None | Some(Json::Null) => String::new(),
        Some(Json::String(s)) => s.clone(),
        Some(Json::Array(items)) => items
            .iter()
            .map(|i| text(Some(i)))
            .collect::<Vec<_>>()
            .join(", "),
        Some(other) => other.to_string(),
    }
}

/// One line saying what a task does: the command, the URL, the packages, the file.
pub fn summary(task: &PlannedTask) -> String {
    let mut line = what_it_does(task);
    if let Some(item) = &task.item {
        let shown = item
            .label
            .clone()
            .unwrap_or_else(|| text(Some(&item.value)));
        let _ = write!(line, "   [{}={shown}]", item.var);
    }
    if let Some(when) = &task.when {
        let _ = write!(line, "   when: {when}");
    }
    if task.on_controller {
        line.push_str("   (in the build's controller folder)");
    }
    line
}

/// The task's argument `name` as text; empty when the task does not give it.
fn arg(task: &PlannedTask, name: &str) -> String {
    text(task.args.get(name))
}

/// A flag argument as `name=yes` or `name=no` (or `name=value`), when the task gives it.
fn on_off(task: &PlannedTask, name: &str) -> Option<String> {
    match task.args.get(name) {
        Some(Json::Bool(true)) => Some(format!("{name}=yes")),
        Some(Json::Bool(false)) => Some(format!("{name}=no")),
        Some(other) => Some(format!("{name}={}", text(Some(other)))),
        None => None,
    }
}

/// The parts that are there, joined by spaces.
fn joined(parts: Vec<Option<String>>) -> String {
    parts.into_iter().flatten().collect::<Vec<_>>().join(" ")
}

/// What the task does, by its module; the arguments as JSON for a module with no summary.
fn what_it_does(task: &PlannedTask) -> String {
    let arg = |name: &str| arg(task, name);
    match task.module.as_str() {
        "shell" | "command" | "script" => command_summary(task),
        "get_url" | "unarchive" | "copy" | "template" => transfer_summary(task),
        "package" | "apt" | "dnf" => packages_summary(task),
        "systemd" | "service" => joined(vec![
            Some(arg("name")),
            on_off(task, "enabled"),
            on_off(task, "masked"),
            task.args
                .get("state")
                .map(|s| format!("state={}", text(Some(s)))),
        ]),
        "file" => joined(vec![
            Some(arg("path")),
            task.args.get("state").map(|s| text(Some(s))),
            task.args
                .get("mode")
                .map(|m| format!("mode={}", text(Some(m)))),
            task.args
                .get("src")
                .map(|s| format!("-> {}", text(Some(s)))),
        ]),
        "lineinfile" => format!("{}: {}", arg("path"), arg("line")),
        "blockinfile" => format!("{} (block)", arg("path")),
        "user" | "group" => joined(vec![
            Some(arg("name")),
            task.args
                .get("uid")
                .or(task.args.get("gid"))
                .map(|id| format!("id={}", text(Some(id)))),
            task.args.get("state").map(|s| text(Some(s))),
        ]),
        "set_fact" => match &task.args {
            Json::Object(map) => map
                .iter()
                .filter(|(k, _)| *k != "cacheable")
                .map(|(k, v)| format!("{k}={}", text(Some(v))))
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        },
        "debug" | "fail" => arg("msg"),
        "assert" => arg("that"),
        "stat" => arg("path"),
        _ => task.args.to_string(),
    }
}

/// The command a `shell`, `command` or `script` task runs, its lines joined by `; `, and the
/// folder it runs in.
fn command_summary(task: &PlannedTask) -> String {
    let cmd = if task.args.get("argv").is_some() {
        arg(task, "argv").replace(", ", " ")
    } else {
        arg(task, "cmd")
    };
    let cmd = cmd
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    match task.args.get("chdir") {
        Some(dir) => format!("$ {cmd}   (in {})", text(Some(dir))),
        None => format!("$ {cmd}"),
    }
}

/// Where a `get_url`, `unarchive`, `copy` or `template` task takes its file, and where it puts
/// it.
fn transfer_summary(task: &PlannedTask) -> String {
    let src = if task.module == "get_url" {
        arg(task, "url")
    } else if task.args.get("content").is_some() {
        "(content)".into()
    } else {
        arg(task, "src")
    };
    format!("{src} -> {}", arg(task, "dest"))
}

/// A package task's state, its packages, and whether it updates the cache.
fn packages_summary(task: &PlannedTask) -> String {
    let state = task
        .args
        .get("state")
        .map(|s| text(Some(s)))
        .unwrap_or_else(|| "present".into());
    let names = if task.args.get("name").is_some() {
        arg(task, "name")
    } else {
        arg(task, "deb")
    };
    let extra = on_off(task, "update_cache")
        .map(|u| format!(" {u}"))
        .unwrap_or_default();
    format!("{state}: {names}{extra}")
}

fn push_steps(out: &mut String, steps: &[Step], indent: &str) {
    for step in steps {
        match step {
            Step::Task(task) => {
                let _ = writeln!(
                    out,
                    "{indent}- {}  [{}]  {}",
                    task.name,
                    task.module,
                    summary(task)
                );
                let _ = writeln!(out, "{indent}    {}", task.source);
            }
            Step::Block(block) => {
                let when = block
                    .when
                    .as_deref()
                    .map(|w| format!("   when: {w}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{indent}- block: {}{when}   {}",
                    block.name, block.source
                );
                let deeper = format!("{indent}    ");
                push_steps(out, &block.block, &deeper);
                if !block.rescue.is_empty() {
                    let _ = writeln!(out, "{indent}  rescue:");
                    push_steps(out, &block.rescue, &deeper);
                }
                if !block.always.is_empty() {
                    let _ = writeln!(out, "{indent}  always:");
                    push_steps(out, &block.always, &deeper);
                }
            }
        }
    }
}

fn role_of(step: &Step) -> &str {
    match step {
        Step::Task(t) => &t.role,
        Step::Block(b) => &b.role,
    }
}

/// The plan as a tree: a header, then each role and its tasks.
pub fn plan_tree(plan: &Plan) -> String {
    let fact = |name: &str| text(plan.facts.get(name));
    let mut out = String::new();
    let tasks = plan.all_tasks().len();
    let _ = writeln!(
        out,
        "{}: {} {}, kernel {}, {} tasks in {} roles",
        plan.image,
        fact("ansible_distribution"),
        fact("ansible_distribution_version"),
        fact("ansible_kernel"),
        tasks,
        plan.roles.len()
    );
    if let Some(mirror) = plan.vars.get("mirror_server") {
        let _ = writeln!(out, "mirror: {}", text(Some(mirror)));
    }
    for role in &plan.roles {
        let steps: Vec<Step> = plan
            .tasks
            .iter()
            .filter(|s| role_of(s) == role)
            .cloned()
            .collect();
        let _ = writeln!(
            out,
            "\n{role}{}",
            if steps.is_empty() { "  (no tasks)" } else { "" }
        );
        push_steps(&mut out, &steps, "  ");
    }
    if !plan.handlers.is_empty() {
        let _ = writeln!(out, "\nhandlers");
        push_steps(&mut out, &plan.handlers, "  ");
    }
    out
}
