//! The last line a running command printed, while it runs: the sandbox's init reads a
//! command's pipes as they fill and sends its newest line at most once a second, as a
//! `{"progress": ...}` line before the command's answer; the host hands it to an
//! [`OutputSink`], through which a reporter's heartbeat says what a long task is doing.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Receives the newest line of the running command's output.
pub type OutputSink = Arc<dyn Fn(&str) + Send + Sync>;

/// The message init sends while a command runs.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Progress {
    /// The newest non-empty line, shortened.
    pub progress: String,
}

impl Progress {
    /// The progress message in an answer line from init, if it is one.
    pub fn parse(line: &str) -> Option<String> {
        serde_json::from_str::<Progress>(line)
            .ok()
            .map(|p| p.progress)
    }
}

/// Sends progress lines on init's standard output, at most one per `every`.
pub(crate) struct Throttle {
    every: Duration,
    last: Mutex<Option<Instant>>,
}

impl Throttle {
    /// One line per `every` at most.
    pub fn new(every: Duration) -> Arc<Throttle> {
        Arc::new(Throttle {
            every,
            last: Mutex::new(None),
        })
    }

    /// Sends the newest line of `output`, unless one was sent less than `every` ago.
    fn offer(&self, output: &[u8]) {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| t.elapsed() < self.every) {
            return;
        }
        let Some(line) = newest_line(output) else {
            return;
        };
        *last = Some(Instant::now());
        let message = serde_json::to_string(&Progress { progress: line }).unwrap_or_default();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{message}").and_then(|()| out.flush());
    }
}

/// The last non-empty line of `output` that has ended (carriage returns end lines too, as a
/// progress bar draws them), at most 160 characters.
fn newest_line(output: &[u8]) -> Option<String> {
    let ended = &output[..output.iter().rposition(|b| *b == b'\n' || *b == b'\r')?];
    let line = ended
        .split(|b| *b == b'\n' || *b == b'\r')
        .map(|l| String::from_utf8_lossy(l).trim().to_owned())
        .rfind(|l| !l.is_empty())?;
    Some(match line.char_indices().nth(160) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line,
    })
}

/// Reads `pipe` to its end on a thread, offering what it read to `throttle`; the thread
/// returns every byte.
pub(crate) fn drain(
    mut pipe: impl Read + Send + 'static,
    throttle: Arc<Throttle>,
) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    all.extend_from_slice(&buf[..n]);
                    throttle.offer(&all);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        all
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_ended_line_is_offered() {
        assert_eq!(
            newest_line(b"Unpacking a\nSetting up b\npartial"),
            Some("Setting up b".into())
        );
        assert_eq!(newest_line(b"one\n\n  \n"), Some("one".into()));
        assert_eq!(newest_line(b"50%\r60%\r"), Some("60%".into()));
        assert_eq!(newest_line(b"no end yet"), None);
        let long = format!("{}\n", "x".repeat(300));
        assert_eq!(newest_line(long.as_bytes()).map(|l| l.len()), Some(163));
    }

    #[test]
    fn progress_lines_are_told_from_answers() {
        assert_eq!(
            Progress::parse(r#"{"progress":"Building module"}"#),
            Some("Building module".into())
        );
        assert_eq!(Progress::parse(r#"{"rc":0,"stdout":"","stderr":""}"#), None);
    }
}
