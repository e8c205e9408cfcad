//! Ctrl-C and SIGTERM: say what was interrupted, then exit 130 (or 143). The progress
//! reporters tell it what runs ([`track`]) and keep mirror credentials out of every event
//! ([`cleaned`]).
//!
//! Little needs undoing: the build sandboxes die with imgbuild (their namespaces, mounts and
//! processes go with them), outputs and cache entries are only ever renamed into place, and
//! leftovers of unfinished work are temporary folders `imgbuild cache prune` removes. The one
//! output written while the roles run, the docker-archive, has its partial file removed here.

use std::sync::Mutex;

use engine::events::Event;

/// What each build is doing, by image: the latest role and task.
static ACTIVITY: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

std::thread_local! {
    static IMAGE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Records that this thread now builds `image`.
pub fn building(image: &str) {
    IMAGE.with(|i| *i.borrow_mut() = image.to_owned());
    set(image, "starting".into());
}

fn set(image: &str, doing: String) {
    let mut activity = ACTIVITY.lock().unwrap_or_else(|e| e.into_inner());
    match activity.iter_mut().find(|(i, _)| i == image) {
        Some(entry) => entry.1 = doing,
        None => activity.push((image.to_owned(), doing)),
    }
}

/// Remembers the latest role and task of `image` (else of the thread's image), what an
/// interrupt's message names.
pub fn track(image: Option<&str>, event: &Event) {
    if let Some(doing) = doing(event) {
        match image {
            Some(image) => set(image, doing),
            None => set(&IMAGE.with(|i| i.borrow().clone()), doing),
        }
    }
}

/// What the build is doing once `event` is seen, when it says. A layer's `Layer` event says
/// nothing: its blob is written while later roles run, so the build has moved on by then.
fn doing(event: &Event) -> Option<String> {
    match event {
        Event::RoleStart { role } => Some(format!("role {role}")),
        Event::TaskStart { role, task, source } => {
            Some(format!("role {role}, task '{task}' ({source})"))
        }
        Event::RoleEnd { role, .. } => Some(format!("role {role}, making its layer")),
        Event::Step { what } => Some(what.clone()),
        _ => None,
    }
}

/// `event` without the mirror credentials its URLs and messages held.
pub fn cleaned(event: Event) -> Event {
    redacted(&event).unwrap_or(event)
}

/// The event with mirror credentials removed from its URLs and messages, when it had any.
fn redacted(event: &Event) -> Option<Event> {
    let clean = |s: &str| {
        let r = mirror::redact_credentials(s);
        (r != s).then_some(r)
    };
    match event {
        Event::Download { url, bytes, total } => clean(url).map(|url| Event::Download {
            url,
            bytes: *bytes,
            total: *total,
        }),
        Event::TaskEnd { msg: Some(msg), .. } => clean(msg).map(|m| {
            let mut copy = event.clone();
            if let Event::TaskEnd { msg, .. } = &mut copy {
                *msg = Some(m);
            }
            copy
        }),
        Event::Note { message } => clean(message).map(|message| Event::Note { message }),
        _ => None,
    }
}

/// Starts the thread that turns SIGINT and SIGTERM into a message and an exit.
pub fn install() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let activity = ACTIVITY.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let what = if signal == SIGINT {
                "interrupted"
            } else {
                "terminated"
            };
            for (image, doing) in activity {
                let image = if image.is_empty() {
                    "the run".into()
                } else {
                    image
                };
                eprintln!("\n{what}: {image} during {doing}; outputs and the cache are as they were before it (rerun to finish)");
            }
            image::docker_archive::remove_unfinished();
            std::process::exit(128 + signal);
        }
    });
}

/// A closed standard output (`imgbuild plan x | head -3`) ends the program quietly with 141, as
/// the shell's SIGPIPE would: Rust ignores SIGPIPE, so printing panics instead, and this hook
/// turns that one panic into the exit. Nothing needs undoing (see above).
pub fn exit_quietly_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.contains("failed printing to std") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_written_behind_the_next_role_does_not_hide_that_role() {
        let role = |role: &str| role.to_owned();
        let events = [
            Event::RoleStart {
                role: role("dracut"),
            },
            Event::RoleEnd {
                role: role("dracut"),
                tasks: 2,
                changed: 2,
                seconds: 70.0,
            },
            Event::RoleStart {
                role: role("chrony"),
            },
            Event::Layer {
                role: role("dracut"),
                digest: "sha256:d".into(),
                size: 1,
                cached: false,
                why: Vec::new(),
                registry: None,
            },
        ];
        let last = events.iter().filter_map(doing).next_back();
        assert_eq!(last.as_deref(), Some("role chrony"));
        assert_eq!(
            doing(&events[1]).as_deref(),
            Some("role dracut, making its layer")
        );
    }
}
