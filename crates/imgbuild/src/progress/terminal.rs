//! A terminal: finished tasks scroll up as plain lines, and below them a live block of one line
//! per image building, each saying its role (i of N), its task, the time it has taken and its
//! command's newest output line, cut to the terminal's width and redrawn four times a second.
//! With `-v`, every output line also scrolls up above the block.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engine::events::Event;

use super::lines::{bar, event_line, fit, output_line};
use super::{Display, Origin};

/// What one image is doing now.
#[derive(Debug)]
struct Live {
    label: String,
    started: Instant,
    last_line: Option<String>,
}

/// The live block and how many lines of it are on the screen.
#[derive(Debug, Default)]
struct Screen {
    live: BTreeMap<String, Live>,
    drawn: usize,
}

impl Screen {
    /// Erases the block from the screen.
    fn erase(&mut self) {
        if self.drawn > 0 {
            // To the start of the block's first line, then clear to the screen's end.
            let mut out = std::io::stderr().lock();
            let _ = write!(out, "\x1b[{}F\x1b[J", self.drawn);
            let _ = out.flush();
            self.drawn = 0;
        }
    }

    /// Erases the block, prints `lines` where it was, and draws it again below them.
    fn print(&mut self, lines: &[String], tag: bool) {
        let width = width();
        self.erase();
        let mut out = std::io::stderr().lock();
        for line in lines {
            let _ = writeln!(out, "{line}");
        }
        self.drawn = 0;
        for (image, live) in &self.live {
            let _ = writeln!(out, "{}", fit(&live_line(tag, image, live), width));
            self.drawn += 1;
        }
        let _ = out.flush();
    }
}

/// `[image] role 3/13 mofed › install (12s): newest output`.
fn live_line(tag: bool, image: &str, live: &Live) -> String {
    let mut line = String::from("  ");
    if tag && !image.is_empty() {
        line.push_str(&format!("[{image}] "));
    }
    line.push_str(&format!(
        "{} ({:.0}s)",
        live.label,
        live.started.elapsed().as_secs_f64()
    ));
    if let Some(last) = &live.last_line {
        line.push_str(&format!(": {last}"));
    }
    line
}

/// The terminal's width (standard error's), 100 when it cannot be read.
fn width() -> usize {
    rustix::termios::tcgetwinsize(std::io::stderr())
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|cols| *cols > 10)
        .unwrap_or(100)
}

/// The live display of a terminal.
#[derive(Debug)]
pub struct TerminalDisplay {
    screen: Arc<Mutex<Screen>>,
    tag: bool,
    verbose: bool,
}

impl TerminalDisplay {
    /// Starts the ticker that redraws the live block. `tag`: name each line's image;
    /// `verbose`: print every line of a command's output above it.
    pub fn new(tag: bool, verbose: bool) -> Self {
        let screen: Arc<Mutex<Screen>> = Arc::default();
        let shared = Arc::downgrade(&screen);
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(250));
            let Some(screen) = shared.upgrade() else {
                break;
            };
            let mut guard = screen.lock().unwrap_or_else(|e| e.into_inner());
            if !guard.live.is_empty() {
                guard.print(&[], tag);
            }
        });
        Self {
            screen,
            tag,
            verbose,
        }
    }
}

/// The label of what starts with `event`, if it starts something.
fn started_label(origin: &Origin, event: &Event) -> Option<String> {
    let role_place = |role: &str| match origin.position {
        Some((i, n)) => format!("role {i}/{n} {role}"),
        None => role.to_owned(),
    };
    match event {
        Event::TaskStart { role, task, .. } => Some(format!("{} › {task}", role_place(role))),
        Event::Step { what } => Some(what.clone()),
        Event::RoleStart { role } => Some(role_place(role)),
        Event::Download { url, bytes, total } if *total != Some(*bytes) => {
            let name = url.rsplit('/').next().unwrap_or(url);
            Some(format!("downloading {name} {}", bar(*bytes, *total)))
        }
        _ => None,
    }
}

/// The lines an event leaves above the live block.
fn lasting_lines(tag: bool, origin: &Origin, event: &Event) -> Vec<String> {
    let Some(line) = event_line(origin.position, event) else {
        return Vec::new();
    };
    let image = origin.key();
    line.lines()
        .map(|part| match tag && !image.is_empty() {
            true => format!("[{image}] {part}"),
            false => part.to_owned(),
        })
        .collect()
}

impl Display for TerminalDisplay {
    fn finished(&self, origin: &Origin) {
        let mut screen = self.screen.lock().unwrap_or_else(|e| e.into_inner());
        if screen.live.remove(origin.key()).is_some() {
            screen.print(&[], self.tag);
        }
    }

    fn print_out(&self, text: &str) {
        let mut screen = self.screen.lock().unwrap_or_else(|e| e.into_inner());
        screen.erase();
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "{text}");
        let _ = out.flush();
        drop(out);
        screen.print(&[], self.tag);
    }

    fn output(&self, origin: &Origin, line: &str) {
        let mut screen = self.screen.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(live) = screen.live.get_mut(origin.key()) {
            live.last_line = Some(line.to_owned());
        }
        if self.verbose {
            let image = origin.key();
            let line = match self.tag && !image.is_empty() {
                true => format!("[{image}] {}", output_line(line)),
                false => output_line(line),
            };
            screen.print(&[line], self.tag);
        }
    }

    fn show(&self, origin: &Origin, event: &Event) {
        let mut screen = self.screen.lock().unwrap_or_else(|e| e.into_inner());
        let key = origin.key().to_owned();
        match started_label(origin, event) {
            Some(label) => {
                let keep = matches!(event, Event::Download { .. })
                    .then(|| screen.live.get(&key).map(|l| l.started))
                    .flatten();
                let live = Live {
                    label,
                    started: keep.unwrap_or_else(Instant::now),
                    last_line: None,
                };
                screen.live.insert(key, live);
            }
            None if matches!(
                event,
                Event::TaskEnd { .. }
                    | Event::RoleEnd { .. }
                    | Event::Layer { .. }
                    | Event::Download { .. }
            ) =>
            {
                screen.live.remove(&key);
            }
            None => {}
        }
        let lines = lasting_lines(self.tag, origin, event);
        screen.print(&lines, self.tag);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(image: &str) -> Origin {
        Origin {
            image: Some(image.into()),
            position: Some((9, 13)),
        }
    }

    #[test]
    fn each_image_has_its_live_line_with_its_role_place_and_newest_output() {
        let task = Event::TaskStart {
            role: "nvidia".into(),
            task: "the driver".into(),
            source: "x.yml:1".into(),
        };
        let label = started_label(&origin("rocky"), &task).expect("a label");
        assert_eq!(label, "role 9/13 nvidia › the driver");
        let live = Live {
            label,
            started: Instant::now(),
            last_line: Some("Building module: nvidia-current".into()),
        };
        assert_eq!(
            live_line(true, "rocky", &live),
            "  [rocky] role 9/13 nvidia › the driver (0s): Building module: nvidia-current"
        );
        assert_eq!(
            live_line(false, "rocky", &live),
            "  role 9/13 nvidia › the driver (0s): Building module: nvidia-current"
        );
    }

    #[test]
    fn finished_work_leaves_a_line_naming_its_image() {
        let end = Event::RoleEnd {
            role: "mofed".into(),
            tasks: 5,
            changed: 4,
            seconds: 61.0,
        };
        assert_eq!(
            lasting_lines(true, &origin("ubuntu"), &end),
            vec!["[ubuntu] == mofed: 5 tasks, 4 changed, 61.0s".to_owned()]
        );
        let task = Event::TaskStart {
            role: "r".into(),
            task: "t".into(),
            source: "s".into(),
        };
        assert!(lasting_lines(true, &origin("ubuntu"), &task).is_empty());
    }
}
