//! The action runner: one Python process per build (`ansible_runner.py`, run by the Python that
//! runs Ansible) that runs the one-task plays of action plugins with ansible-core's own executor,
//! as ansible-playbook does, so that each such task does not pay ansible-playbook's start.
//! Requests go one a line (JSON) on its stdin, answers come one a line on its stdout; it ends
//! when its stdin closes, with the build. An ansible-core whose executor it cannot drive makes it
//! answer "unsupported" once, and those tasks run through ansible-playbook, one run each.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

use serde_json::Value as Json;

const SCRIPT: &str = include_str!("ansible_runner.py");

/// What the runner made of a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// The play ran: its result is in the task folder's `result.json` (none if no task ran).
    Ran,
    /// Ansible refused the play before running it, with its message.
    Refused(String),
    /// No runner here (ansible-core cannot be driven, or no Python starts it): run
    /// ansible-playbook instead.
    Unsupported(String),
}

struct Runner {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The environment it was started with (the project's collections).
    env: Vec<(String, String)>,
}

impl Drop for Runner {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

enum State {
    NotStarted,
    Running(Runner),
    Unsupported(String),
}

static RUNNER: Mutex<State> = Mutex::new(State::NotStarted);

/// Runs `request` (the task folder, its plugin folders, check and diff) with the runner started
/// with `env`, starting it first when none runs with that environment.
pub fn run(request: &Json, env: &[(String, String)]) -> Answer {
    let mut state = RUNNER.lock().unwrap_or_else(|e| e.into_inner());
    if let State::Unsupported(why) = &*state {
        return Answer::Unsupported(why.clone());
    }
    if !matches!(&*state, State::Running(runner) if runner.env == env) {
        *state = match start(env) {
            Ok(runner) => State::Running(runner),
            Err(why) => State::Unsupported(why),
        };
    }
    let State::Running(runner) = &mut *state else {
        let State::Unsupported(why) = &*state else {
            return Answer::Unsupported("the action runner did not start".into());
        };
        return Answer::Unsupported(why.clone());
    };
    match ask(runner, request) {
        Ok(answer) => answer,
        Err(why) => {
            // A runner that stopped is started again for the next task.
            *state = State::NotStarted;
            Answer::Refused(format!("ERROR! the action runner stopped ({why})"))
        }
    }
}

/// Starts the runner with the first Python that answers it is ready.
fn start(env: &[(String, String)]) -> Result<Runner, String> {
    let mut why = String::from("no Python to run ansible-core with");
    for python in ansible::python::interpreters() {
        let spawned = Command::new(&python)
            .args(["-c", SCRIPT])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Ansible's warnings and deprecations: a build reports the task's result only.
            .stderr(Stdio::null())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                why = format!("{python}: {e}");
                continue;
            }
        };
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            continue;
        };
        let mut runner = Runner {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            env: env.to_vec(),
        };
        match read_answer(&mut runner) {
            Ok(hello) if hello.get("ready") == Some(&Json::Bool(true)) => return Ok(runner),
            Ok(hello) => {
                why = hello
                    .get("unsupported")
                    .and_then(Json::as_str)
                    .unwrap_or("it did not start")
                    .to_owned();
            }
            Err(e) => why = format!("{python}: {e}"),
        }
    }
    Err(why)
}

/// Sends `request` and reads the answer.
fn ask(runner: &mut Runner, request: &Json) -> Result<Answer, String> {
    let line = format!("{request}\n");
    runner
        .stdin
        .write_all(line.as_bytes())
        .and_then(|()| runner.stdin.flush())
        .map_err(|e| e.to_string())?;
    let answer = read_answer(runner)?;
    Ok(match answer.get("error").and_then(Json::as_str) {
        Some(message) => Answer::Refused(message.to_owned()),
        None => Answer::Ran,
    })
}

/// The runner's next line, as JSON.
fn read_answer(runner: &mut Runner) -> Result<Json, String> {
    let mut line = String::new();
    match runner.stdout.read_line(&mut line) {
        Ok(0) => Err("it ended".into()),
        Ok(_) => serde_json::from_str(&line).map_err(|e| format!("an answer that is no JSON: {e}")),
        Err(e) => Err(e.to_string()),
    }
}
