//! `lookup('pipe', ...)` and `lookup('lines', ...)`: a command run on the machine running the
//! build, as Ansible runs it on its controller (`/bin/sh -c`, in the playbook's folder, its
//! standard error left to the terminal). A task only renders them when it runs (a `when` that is
//! false never does); what the command printed is part of the rendered task, so a changed output
//! changes the plan and the layer's key.

use std::process::{Command, Stdio};

use minijinja::{Error, Value};

use super::lookup_state::{lookup_failed, root};

/// Runs `command` as Ansible's pipe and lines plugins do: its standard output, or a lookup
/// failure naming the exit code.
fn run(plugin: &str, command: &str) -> Result<String, Error> {
    let base = root();
    let playbooks = base.join("images");
    let folder = if playbooks.is_dir() { playbooks } else { base };
    let output = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .current_dir(if folder.as_os_str().is_empty() {
            std::path::PathBuf::from(".")
        } else {
            folder
        })
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| lookup_failed(format!("lookup_plugin.{plugin}({command}): {e}")))?;
    if !output.status.success() {
        let code = output.status.code().unwrap_or(-1);
        return Err(lookup_failed(format!(
            "lookup_plugin.{plugin}({command}) returned {code}"
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `pipe`: each command's output, trailing white space stripped.
pub fn pipe(commands: &[String]) -> Result<Vec<Value>, Error> {
    commands
        .iter()
        .map(|command| Ok(Value::from(run("pipe", command)?.trim_end())))
        .collect()
}

/// `lines`: each command's output, one item a line.
pub fn lines(commands: &[String]) -> Result<Vec<Value>, Error> {
    let mut items = Vec::new();
    for command in commands {
        let output = run("lines", command)?;
        items.extend(output.lines().map(Value::from));
    }
    Ok(items)
}
