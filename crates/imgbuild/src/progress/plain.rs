//! Plain lines (CI, no terminal). A task that runs longer than the heartbeat period gets a
//! `still running` line each period, with the newest line of its output, so a CI log never
//! sits silent for minutes. With several images at once, each line starts with its image. With
//! `-v`, every line of a command's output is printed too, under its task.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engine::events::Event;

use super::lines::{event_line, megabytes, output_line};
use super::{Display, Origin};

/// The task or step running now in one image.
#[derive(Debug)]
struct Running {
    label: String,
    started: Instant,
    last_line: Option<String>,
    last_beat: Instant,
}

/// What runs, by image (`""` for what no image owns, as a download).
type RunningSlots = Arc<Mutex<BTreeMap<String, Running>>>;

/// Plain lines on standard error, with a heartbeat for long tasks.
#[derive(Debug)]
pub struct PlainDisplay {
    running: RunningSlots,
    tag: bool,
    verbose: bool,
}

impl PlainDisplay {
    /// Starts the heartbeat: every `every`, a line for each task still running. `tag`: start
    /// each line with its image (several images build at once). `verbose`: print every line of
    /// a command's output.
    pub fn new(every: Duration, tag: bool, verbose: bool) -> Self {
        let running: RunningSlots = Arc::new(Mutex::new(BTreeMap::new()));
        let shared = Arc::downgrade(&running);
        let tick = every.min(Duration::from_secs(1));
        std::thread::spawn(move || loop {
            std::thread::sleep(tick);
            let Some(running) = shared.upgrade() else {
                break;
            };
            let mut guard = running.lock().unwrap_or_else(|e| e.into_inner());
            for (image, now) in guard.iter_mut() {
                if now.started.elapsed() >= every && now.last_beat.elapsed() >= every {
                    now.last_beat = Instant::now();
                    let line = prefixed(tag, image, &heartbeat_line(now));
                    let _ = writeln!(std::io::stderr().lock(), "{line}");
                }
            }
        });
        Self {
            running,
            tag,
            verbose,
        }
    }
}

/// `[image] line` when tagged and the line has an image.
fn prefixed(tag: bool, image: &str, line: &str) -> String {
    if tag && !image.is_empty() {
        format!("[{image}] {line}")
    } else {
        line.to_owned()
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

/// The line an event prints, if any: the shared ones, a step, a finished download.
fn line_of(origin: &Origin, event: &Event) -> Option<String> {
    match event {
        Event::Step { what } => Some(format!("-- {what}")),
        Event::Download { url, bytes, total } if total.is_some_and(|t| t == *bytes) => {
            Some(format!("  downloaded {url} ({})", megabytes(*bytes)))
        }
        _ => event_line(origin.position, event),
    }
}

impl Display for PlainDisplay {
    fn output(&self, origin: &Origin, line: &str) {
        let mut guard = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(now) = guard.get_mut(origin.key()) {
            now.last_line = Some(line.to_owned());
        }
        if self.verbose {
            let line = prefixed(self.tag, origin.key(), &output_line(line));
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
    }

    fn show(&self, origin: &Origin, event: &Event) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let start = |label: String| Running {
            label,
            started: Instant::now(),
            last_line: None,
            last_beat: Instant::now(),
        };
        let key = origin.key().to_owned();
        match event {
            Event::TaskStart { role, task, .. } => {
                running.insert(key.clone(), start(format!("[{role}] {task}")));
            }
            Event::Step { what } => {
                running.insert(key.clone(), start(what.clone()));
            }
            Event::TaskEnd { .. } | Event::RoleEnd { .. } | Event::RoleStart { .. } => {
                running.remove(&key);
            }
            _ => {}
        }
        if let Some(line) = line_of(origin, event) {
            let mut out = std::io::stderr().lock();
            for part in line.lines() {
                let _ = writeln!(out, "{}", prefixed(self.tag, &key, part));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(image: &str) -> Origin {
        Origin {
            image: Some(image.into()),
            position: Some((3, 13)),
        }
    }

    fn heartbeat(display: &PlainDisplay, image: &str) -> String {
        let guard = display.running.lock().expect("lock");
        heartbeat_line(guard.get(image).expect("running"))
    }

    #[test]
    fn the_heartbeat_shows_each_images_newest_output_line() {
        let display = PlainDisplay::new(Duration::from_secs(3600), true, false);
        let task = |task: &str| Event::TaskStart {
            role: "nvidia".into(),
            task: task.into(),
            source: "x.yml:1".into(),
        };
        display.show(&origin("a"), &task("the driver"));
        display.show(&origin("b"), &task("the other driver"));
        assert!(heartbeat(&display, "a").ends_with("the driver: still running (0s)"));
        display.output(&origin("a"), "Building module: nvidia-current/535.261.03");
        assert!(
            heartbeat(&display, "a")
                .ends_with("still running (0s): Building module: nvidia-current/535.261.03"),
            "{}",
            heartbeat(&display, "a")
        );
        assert!(heartbeat(&display, "b").ends_with("still running (0s)"));
        display.show(
            &origin("a"),
            &Event::RoleEnd {
                role: "nvidia".into(),
                tasks: 1,
                changed: 1,
                seconds: 1.0,
            },
        );
        display.output(&origin("a"), "late");
        let guard = display.running.lock().expect("lock");
        assert!(!guard.contains_key("a") && guard.contains_key("b"));
    }

    #[test]
    fn lines_name_their_image_when_tagged_and_the_role_its_place() {
        assert_eq!(prefixed(true, "rocky", "== mofed"), "[rocky] == mofed");
        assert_eq!(prefixed(false, "rocky", "== mofed"), "== mofed");
        assert_eq!(prefixed(true, "", "downloaded x"), "downloaded x");
        let start = Event::RoleStart {
            role: "mofed".into(),
        };
        assert_eq!(
            line_of(&origin("a"), &start).as_deref(),
            Some("== mofed (role 3 of 13)")
        );
    }
}
