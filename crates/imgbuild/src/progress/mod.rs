//! What a person or a machine sees while imgbuild runs: JSON events with `--json`, plain lines
//! in CI, a live block on a terminal. Each image's events come through its own [`ForImage`],
//! so with `--jobs` every event names its image and each image has its own live line.

mod ansi;
mod json;
mod lines;
pub mod mode;
mod plain;
mod terminal;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::events::{Event, Reporter};
use engine::live_output::OutputSink;

pub use json::JsonDisplay;
pub use plain::PlainDisplay;
pub use terminal::TerminalDisplay;

/// Where an event comes from: its image, and the place of its role among the recipe's.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The image being built; `None` for what no one image owns (a shared download).
    pub image: Option<String>,
    /// The role's place: `(i, n)` for role i of n.
    pub position: Option<(usize, usize)>,
}

impl Origin {
    /// The image's name, `""` for none: the key of its live line.
    pub fn key(&self) -> &str {
        self.image.as_deref().unwrap_or_default()
    }
}

/// Shows the events of every image of a run.
pub trait Display: Send + Sync {
    /// One event of the image `origin` names (already free of secrets).
    fn show(&self, origin: &Origin, event: &Event);

    /// The newest output line of the command `origin`'s image runs.
    fn output(&self, _origin: &Origin, _line: &str) {}

    /// `origin`'s image is done: nothing of it runs any more.
    fn finished(&self, _origin: &Origin) {}

    /// Prints `text` on standard output (an image's summary), clear of any live lines.
    fn print_out(&self, text: &str) {
        print!("{text}");
    }
}

/// The display for this run (`--progress`, `-q`, `-v`, `--json`; [`mode`]): JSON events,
/// nothing but the result, plain lines (CI, no terminal, `TERM=dumb`), or the live terminal
/// block. `several`: more than one image builds at once, so lines name their image.
pub fn display(json: bool, several: bool) -> Arc<dyn Display> {
    let mode = mode::current();
    let verbose = mode.verbosity == mode::Verbosity::Verbose;
    match mode::choose(json, mode, mode::Terminal::of_stderr()) {
        mode::Shown::Json => Arc::new(JsonDisplay),
        mode::Shown::Quiet => Arc::new(QuietDisplay),
        mode::Shown::Plain => {
            // A `still running` line every 15 s of a long task (IMGBUILD_HEARTBEAT_SECS to change).
            let every = std::env::var("IMGBUILD_HEARTBEAT_SECS")
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .filter(|s| *s > 0)
                .unwrap_or(15);
            Arc::new(PlainDisplay::new(
                Duration::from_secs(every),
                several,
                verbose,
            ))
        }
        mode::Shown::Tty => Arc::new(TerminalDisplay::new(several, verbose)),
    }
}

/// `-q`: shows no progress; the result still goes to standard output, errors to standard error.
#[derive(Debug, Default)]
pub struct QuietDisplay;

impl Display for QuietDisplay {
    fn show(&self, _origin: &Origin, _event: &Event) {}
}

/// The reporter one image's build (or a run of no one image) hands the engine: it remembers
/// what runs for an interrupt's message, keeps secrets out, finds the role's place in the
/// recipe, and passes the event to the display with its origin.
pub struct ForImage {
    display: Arc<dyn Display>,
    image: Option<String>,
    roles: Vec<String>,
    /// The recipe's roles already started: where the next role is looked for.
    next_role: Mutex<Origin>,
}

impl ForImage {
    /// The reporter of `image` (whose recipe runs `roles` in order), or of no image.
    pub fn new(display: Arc<dyn Display>, image: Option<&str>, roles: &[String]) -> Self {
        Self {
            display,
            image: image.map(str::to_owned),
            roles: roles.to_vec(),
            next_role: Mutex::new(Origin {
                image: image.map(str::to_owned),
                position: None,
            }),
        }
    }

    /// The origin of `event`: a role that starts moves the place to the next role of its name;
    /// a layer moves it there too unless it is the running role's own (a cached role sends
    /// only its layer).
    fn origin_of(&self, event: &Event) -> Origin {
        let mut origin = self.next_role.lock().unwrap_or_else(|e| e.into_inner());
        let current = origin.position.map(|(i, _)| i);
        let from = match event {
            Event::Layer { role, .. }
                if current.is_some_and(|i| self.roles.get(i - 1) == Some(role)) =>
            {
                None
            }
            Event::RoleStart { role } | Event::Layer { role, .. } => {
                Some((current.unwrap_or(0), role))
            }
            _ => None,
        };
        if let Some((from, role)) = from {
            let found = self.roles[from.min(self.roles.len())..]
                .iter()
                .position(|r| r == role)
                .map(|at| (from + at + 1, self.roles.len()));
            if found.is_some() {
                origin.position = found;
            }
        }
        origin.clone()
    }
}

impl ForImage {
    /// Prints `text` on standard output, clear of the live lines.
    pub fn print_out(&self, text: &str) {
        self.display.print_out(text);
    }
}

impl Drop for ForImage {
    fn drop(&mut self) {
        self.display.finished(&Origin {
            image: self.image.clone(),
            position: None,
        });
    }
}

impl Reporter for ForImage {
    fn event(&self, event: &Event) {
        let event = crate::interrupt::cleaned(event.redacted());
        crate::interrupt::track(self.image.as_deref(), &event);
        let origin = self.origin_of(&event);
        self.display.show(&origin, &event);
    }

    fn output_sink(&self) -> Option<OutputSink> {
        let display = self.display.clone();
        let origin = Origin {
            image: self.image.clone(),
            position: None,
        };
        Some(Arc::new(move |line: &str| {
            // Escapes out first: a colour code inside a secret would hide it from redaction.
            let line = ansi::clean(line);
            let line = mirror::redact_credentials(&planner::vault::redact(&line));
            display.output(&origin, &line);
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps what it is shown.
    #[derive(Default)]
    struct Kept(Mutex<Vec<(Origin, Event)>>);

    impl Display for Kept {
        fn show(&self, origin: &Origin, event: &Event) {
            self.0
                .lock()
                .expect("lock")
                .push((origin.clone(), event.clone()));
        }
    }

    #[test]
    fn each_event_names_its_image_and_its_roles_place() {
        let kept = Arc::new(Kept::default());
        let roles: Vec<String> = ["kernel", "mofed", "nvidia", "mofed"]
            .map(String::from)
            .to_vec();
        let reporter = ForImage::new(kept.clone(), Some("rocky-9.5-compute"), &roles);
        let start = |role: &str| Event::RoleStart { role: role.into() };
        let layer = |role: &str| Event::Layer {
            role: role.into(),
            digest: "sha256:0".into(),
            size: 0,
            cached: true,
            why: Vec::new(),
            registry: None,
        };
        reporter.event(&start("kernel"));
        reporter.event(&start("mofed"));
        reporter.event(&Event::Note {
            message: "within mofed".into(),
        });
        reporter.event(&layer("mofed"));
        // nvidia's layer from the cache: no start, only its layer.
        reporter.event(&layer("nvidia"));
        reporter.event(&start("mofed"));
        let shown = kept.0.lock().expect("lock");
        let places: Vec<Option<(usize, usize)>> =
            shown.iter().map(|(origin, _)| origin.position).collect();
        assert_eq!(
            places,
            vec![
                Some((1, 4)),
                Some((2, 4)),
                Some((2, 4)),
                Some((2, 4)),
                Some((3, 4)),
                Some((4, 4))
            ]
        );
        assert!(shown
            .iter()
            .all(|(origin, _)| origin.image.as_deref() == Some("rocky-9.5-compute")));
    }
}
