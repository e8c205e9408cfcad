//! What a running build tells people and machines: a live line per task on a terminal, plain
//! lines in CI, JSON events with `--json`.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Ran, changed nothing.
    Ok,
    /// Ran and changed something.
    Changed,
    /// Did not run (condition, check mode, `creates`).
    Skipped,
    /// Failed (and `ignore_errors` let the build go on when `ignored`).
    Failed,
}

/// One event of a build.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A role (layer) starts.
    RoleStart {
        /// The role.
        role: String,
    },
    /// A task starts.
    TaskStart {
        /// The role.
        role: String,
        /// The task's name.
        task: String,
        /// `path:line`.
        source: String,
    },
    /// A task ended.
    TaskEnd {
        /// The role.
        role: String,
        /// The task's name.
        task: String,
        /// `path:line`.
        source: String,
        /// How it ended.
        status: Status,
        /// Seconds it took.
        seconds: f64,
        /// A message (debug output, skip reason, failure).
        #[serde(skip_serializing_if = "Option::is_none")]
        msg: Option<String>,
        /// A failure that `ignore_errors` let pass.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        ignored: bool,
    },
    /// A file's before and after (`--diff`).
    Diff {
        /// The unified diff.
        diff: String,
    },
    /// Download progress.
    Download {
        /// The URL.
        url: String,
        /// Bytes so far.
        bytes: u64,
        /// Total, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        total: Option<u64>,
    },
    /// A role's layer is ready (built or from the cache).
    Layer {
        /// The role.
        role: String,
        /// The layer's digest.
        digest: String,
        /// Compressed size.
        size: u64,
        /// Reused from the cache.
        cached: bool,
        /// Why it was rebuilt (what changed since the last build), when it was.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        why: Vec<String>,
        /// The registry cache it came from, when it came from one (`--cache-from`).
        #[serde(skip_serializing_if = "Option::is_none")]
        registry: Option<String>,
    },
    /// A step of the build outside the roles starts (the base, verify, the outputs).
    Step {
        /// What it does.
        what: String,
    },
    /// Something a person should know that is not a task's result (a fallback taken).
    Note {
        /// What happened and what it means.
        message: String,
    },
    /// A role ended.
    RoleEnd {
        /// The role.
        role: String,
        /// Tasks run.
        tasks: usize,
        /// Tasks that changed something.
        changed: usize,
        /// Seconds the role took.
        seconds: f64,
    },
}

impl Event {
    /// The event with every vault secret replaced by its marker (see `planner::vault`): what
    /// the reporters print.
    pub fn redacted(&self) -> Event {
        let mut event = self.clone();
        let texts: Vec<&mut String> = match &mut event {
            Event::RoleStart { role } => vec![role],
            Event::TaskStart { role, task, source } => vec![role, task, source],
            Event::TaskEnd {
                role,
                task,
                source,
                msg,
                ..
            } => [role, task, source]
                .into_iter()
                .chain(msg.as_mut())
                .collect(),
            Event::Diff { diff } => vec![diff],
            Event::Download { url, .. } => vec![url],
            Event::Layer { role, why, .. } => std::iter::once(role).chain(why.iter_mut()).collect(),
            Event::Step { what } => vec![what],
            Event::Note { message } => vec![message],
            Event::RoleEnd { role, .. } => vec![role],
        };
        for text in texts {
            *text = planner::vault::redact(text);
        }
        event
    }
}

/// Receives the events of a build.
pub trait Reporter: Send + Sync {
    /// One event.
    fn event(&self, event: &Event);

    /// Where the newest line of a running command's output goes, for a reporter that shows
    /// it (the plain reporter's heartbeat); `None` when it is not wanted.
    fn output_sink(&self) -> Option<crate::live_output::OutputSink> {
        None
    }
}

/// The task or step running now: its label, when it started, and the newest line its command
/// printed.
#[derive(Debug)]
struct Running {
    label: String,
    started: Instant,
    last_line: Option<String>,
}

type RunningSlot = Arc<Mutex<Option<Running>>>;

/// Plain lines (CI, no terminal). A task that runs longer than the heartbeat period gets a
/// `still running` line each period, with the newest line of its output, so a CI log never
/// sits silent for minutes.
#[derive(Debug)]
pub struct PlainReporter {
    running: RunningSlot,
}

impl Default for PlainReporter {
    fn default() -> Self {
        Self::new(Duration::from_secs(15))
    }
}

impl PlainReporter {
    /// Starts the heartbeat: every `every`, a line for the task still running.
    pub fn new(every: Duration) -> Self {
        let running: RunningSlot = Arc::new(Mutex::new(None));
        let shared = Arc::downgrade(&running);
        let tick = every.min(Duration::from_secs(1));
        std::thread::spawn(move || {
            let mut last_beat = Instant::now();
            loop {
                std::thread::sleep(tick);
                let Some(running) = shared.upgrade() else {
                    break;
                };
                let guard = running.lock().unwrap_or_else(|e| e.into_inner());
                let Some(now) = guard.as_ref() else {
                    continue;
                };
                if now.started.elapsed() >= every && last_beat.elapsed() >= every {
                    last_beat = Instant::now();
                    let _ = writeln!(std::io::stderr().lock(), "{}", heartbeat_line(now));
                }
            }
        });
        Self { running }
    }
}

/// `  [role] task: still running (45s): <the newest line of its output>`.
fn heartbeat_line(now: &Running) -> String {
    let mut line = format!(
        "  {}: still running ({:.0}s)",
        now.label,
        now.started.elapsed().as_secs_f64()
    );
    if let Some(last) = &now.last_line {
        line.push_str(&format!(": {last}"));
    }
    line
}

fn status_word(status: Status, ignored: bool) -> &'static str {
    match (status, ignored) {
        (Status::Failed, true) => "failed (ignored)",
        (Status::Ok, _) => "ok",
        (Status::Changed, _) => "changed",
        (Status::Skipped, _) => "skipped",
        (Status::Failed, false) => "FAILED",
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// A text progress bar: `[#####.....] 50% 12.0 MB/24.0 MB`.
pub fn bar(bytes: u64, total: Option<u64>) -> String {
    match total.filter(|t| *t > 0) {
        Some(total) => {
            let done = bytes.min(total);
            let filled = ((done * 20) / total) as usize;
            format!(
                "[{}{}] {:>3}% {}/{}",
                "#".repeat(filled),
                ".".repeat(20 - filled),
                done * 100 / total,
                megabytes(bytes),
                megabytes(total)
            )
        }
        None => megabytes(bytes),
    }
}

fn layer_line(
    role: &str,
    digest: &str,
    size: u64,
    cached: bool,
    why: &[String],
    registry: &Option<String>,
) -> String {
    let short = digest
        .trim_start_matches("sha256:")
        .get(..12)
        .unwrap_or(digest);
    let how = if let Some(registry) = registry {
        format!("from the registry cache {registry}")
    } else if cached {
        "from cache".to_owned()
    } else if why.is_empty() {
        "built".to_owned()
    } else {
        format!("rebuilt: {}", why.join("; "))
    };
    format!("== {role}: layer {short} ({}) {how}", megabytes(size))
}

fn end_line(
    role: &str,
    task: &str,
    status: Status,
    seconds: f64,
    msg: &Option<String>,
    ignored: bool,
) -> String {
    let mut line = format!(
        "[{role}] {task}: {} ({seconds:.1}s)",
        status_word(status, ignored)
    );
    if let Some(msg) = msg
        .as_ref()
        .filter(|m| !m.is_empty() && status != Status::Failed)
    {
        let first = msg.lines().next().unwrap_or_default();
        line.push_str(&format!(" - {first}"));
    }
    line
}

impl Reporter for PlainReporter {
    fn output_sink(&self) -> Option<crate::live_output::OutputSink> {
        let running = Arc::downgrade(&self.running);
        Some(Arc::new(move |line: &str| {
            if let Some(running) = running.upgrade() {
                let mut guard = running.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(now) = guard.as_mut() {
                    now.last_line = Some(planner::vault::redact(line));
                }
            }
        }))
    }

    fn event(&self, event: &Event) {
        let event = &event.redacted();
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let start = |label: String| {
            Some(Running {
                label,
                started: Instant::now(),
                last_line: None,
            })
        };
        match event {
            Event::TaskStart { role, task, .. } => *running = start(format!("[{role}] {task}")),
            Event::Step { what } => *running = start(what.clone()),
            Event::TaskEnd { .. } | Event::RoleEnd { .. } | Event::RoleStart { .. } => {
                *running = None
            }
            _ => {}
        }
        let mut out = std::io::stderr().lock();
        let _ = match event {
            Event::RoleStart { role } => writeln!(out, "== {role}"),
            Event::Note { message } => writeln!(out, "note: {message}"),
            Event::Step { what } => writeln!(out, "-- {what}"),
            Event::TaskStart { .. } => Ok(()),
            Event::Download { url, bytes, total } if total.is_some_and(|t| t == *bytes) => {
                writeln!(out, "  downloaded {url} ({})", megabytes(*bytes))
            }
            Event::Download { .. } => Ok(()),
            Event::Layer {
                role,
                digest,
                size,
                cached,
                why,
                registry,
            } => writeln!(
                out,
                "{}",
                layer_line(role, digest, *size, *cached, why, registry)
            ),
            Event::TaskEnd {
                role,
                task,
                status,
                seconds,
                msg,
                ignored,
                ..
            } => writeln!(
                out,
                "{}",
                end_line(role, task, *status, *seconds, msg, *ignored)
            ),
            Event::Diff { diff } => write!(out, "{diff}"),
            Event::RoleEnd {
                role,
                tasks,
                changed,
                seconds,
            } => writeln!(
                out,
                "== {role}: {tasks} tasks, {changed} changed, {seconds:.1}s"
            ),
        };
    }
}

/// One JSON object per line on standard output.
#[derive(Debug, Default)]
pub struct JsonReporter;

impl Reporter for JsonReporter {
    fn event(&self, event: &Event) {
        let event = &event.redacted();
        if let Event::Download { bytes, total, .. } = event {
            // Only the finished download, not every tick.
            if *total != Some(*bytes) {
                return;
            }
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", serde_json::to_string(event).unwrap_or_default());
    }
}

/// A live line per running task, rewritten with the elapsed time.
#[derive(Debug)]
pub struct TerminalReporter {
    running: Arc<Mutex<Option<(String, Instant)>>>,
}

impl Default for TerminalReporter {
    fn default() -> Self {
        Self::new()
    }
}

impl TerminalReporter {
    /// Starts the ticker that refreshes the live line.
    pub fn new() -> Self {
        let running: Arc<Mutex<Option<(String, Instant)>>> = Arc::new(Mutex::new(None));
        let shared = Arc::downgrade(&running);
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(250));
            let Some(running) = shared.upgrade() else {
                break;
            };
            let guard = running.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((label, started)) = guard.as_ref() {
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\r\x1b[K  {label} ({:.0}s)",
                    started.elapsed().as_secs_f64()
                );
                let _ = err.flush();
            }
        });
        Self { running }
    }
}

impl Reporter for TerminalReporter {
    fn event(&self, event: &Event) {
        let event = &event.redacted();
        let mut guard = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let mut err = std::io::stderr().lock();
        match event {
            Event::TaskStart { role, task, .. } => {
                let label = format!("{role} › {task}");
                let _ = write!(err, "\r\x1b[K  {label}");
                *guard = Some((label, Instant::now()));
            }
            Event::TaskEnd {
                role,
                task,
                status,
                seconds,
                msg,
                ignored,
                ..
            } => {
                *guard = None;
                let _ = writeln!(
                    err,
                    "\r\x1b[K{}",
                    end_line(role, task, *status, *seconds, msg, *ignored)
                );
            }
            Event::Note { message } => {
                let _ = writeln!(err, "\r\x1b[Knote: {message}");
            }
            Event::Step { what } => {
                let _ = write!(err, "\r\x1b[K  {what}");
                *guard = Some((what.clone(), Instant::now()));
            }
            Event::Layer {
                role,
                digest,
                size,
                cached,
                why,
                registry,
            } => {
                *guard = None;
                let _ = writeln!(
                    err,
                    "\r\x1b[K{}",
                    layer_line(role, digest, *size, *cached, why, registry)
                );
            }
            Event::Download { url, bytes, total } => {
                let name = url.rsplit('/').next().unwrap_or(url);
                let _ = write!(err, "\r\x1b[K  downloading {name} {}", bar(*bytes, *total));
            }
            Event::RoleStart { role } => {
                *guard = None;
                let _ = writeln!(err, "\r\x1b[K== {role}");
            }
            Event::Diff { diff } => {
                let _ = write!(err, "\r\x1b[K{diff}");
            }
            Event::RoleEnd {
                role,
                tasks,
                changed,
                seconds,
            } => {
                let _ = writeln!(
                    err,
                    "\r\x1b[K== {role}: {tasks} tasks, {changed} changed, {seconds:.1}s"
                );
            }
        }
        let _ = err.flush();
    }
}

/// Collects events (tests).
#[derive(Debug, Default)]
pub struct MemoryReporter {
    /// The events so far.
    pub events: Mutex<Vec<Event>>,
}

impl Reporter for MemoryReporter {
    fn event(&self, event: &Event) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_events_never_hold_a_vault_secret() {
        planner::vault::reveal("events-unit-secret", "<vault:0000000000000001>");
        let event = Event::TaskEnd {
            role: "r".into(),
            task: "use events-unit-secret".into(),
            source: "roles/r/tasks/main.yml:1".into(),
            status: Status::Failed,
            seconds: 0.0,
            msg: Some("failed with events-unit-secret".into()),
            ignored: false,
        };
        let shown = serde_json::to_string(&event.redacted()).expect("json");
        assert!(!shown.contains("events-unit-secret"), "{shown}");
        assert_eq!(
            shown.matches("<vault:0000000000000001>").count(),
            2,
            "{shown}"
        );
    }

    #[test]
    fn progress_bar() {
        assert_eq!(
            bar(50, Some(100)),
            "[##########..........]  50% 0.0 MB/0.0 MB"
        );
        assert_eq!(bar(2_000_000, None), "2.0 MB");
        assert!(bar(200, Some(100)).contains("100%"));
    }

    #[test]
    fn the_heartbeat_shows_the_newest_output_line_once_there_is_one() {
        let reporter = PlainReporter::new(Duration::from_secs(3600));
        reporter.event(&Event::TaskStart {
            role: "nvidia".into(),
            task: "the driver".into(),
            source: "x.yml:1".into(),
        });
        let line = |r: &PlainReporter| {
            let guard = r.running.lock().expect("lock");
            heartbeat_line(guard.as_ref().expect("running"))
        };
        assert!(
            line(&reporter).ends_with("still running (0s)"),
            "{}",
            line(&reporter)
        );
        let sink = reporter.output_sink().expect("a sink");
        sink("Building module: nvidia-current/535.261.03");
        assert!(
            line(&reporter)
                .ends_with("still running (0s): Building module: nvidia-current/535.261.03"),
            "{}",
            line(&reporter)
        );
        reporter.event(&Event::RoleEnd {
            role: "nvidia".into(),
            tasks: 1,
            changed: 1,
            seconds: 1.0,
        });
        sink("late");
        assert!(reporter.running.lock().expect("lock").is_none());
    }
}
