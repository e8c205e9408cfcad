//! What a running build tells people and machines: its events, and the [`Reporter`] that
//! receives them (imgbuild's `progress` shows them on a terminal, in CI, or as JSON).

use std::sync::Mutex;

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
}
