//! The layers on their way into the image, in the order their roles come: those whose blobs are
//! being written (see `pending`) and those that came ready (from a cache) behind them. A layer
//! enters the image only after every layer below it has.

use std::collections::VecDeque;

use super::error::BuildError;
use super::pending::{PendingLayer, RoleLayer};
use crate::cache::Entry;

/// Where a layer came from.
#[derive(Debug, Clone, Copy)]
pub(super) struct Taken {
    /// Reused from the cache (the local one or the registry's), not made by this build.
    pub cached: bool,
    /// Taken from the registry cache (`--cache-from`).
    pub from_registry: bool,
}

/// A layer whose blob is there, ready to enter the image.
pub(super) struct Ready {
    /// The layer.
    pub layer: RoleLayer,
    /// Its stored entry.
    pub entry: Entry,
    /// Where it came from.
    pub taken: Taken,
    /// The seconds it took: the role's run and its blob's writing, or its lookup.
    pub seconds: f64,
}

/// How long to wait for the blobs being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    /// Not at all: only the layers already written come out.
    Never,
    /// Until at most this many are still being written.
    UntilWriting(usize),
    /// Until every one is written.
    All,
}

enum Queued {
    Writing(PendingLayer),
    Ready(Box<Ready>),
}

/// The layers between their roles and the image, bottom first.
#[derive(Default)]
pub(super) struct LayerQueue {
    queued: VecDeque<Queued>,
}

impl LayerQueue {
    /// Queues a layer whose blob is being written.
    pub fn push_writing(&mut self, pending: PendingLayer) {
        self.queued.push_back(Queued::Writing(pending));
    }

    /// Queues a layer that is ready (it waits for those below it).
    pub fn push_ready(&mut self, ready: Ready) {
        self.queued.push_back(Queued::Ready(Box::new(ready)));
    }

    /// The next layer that may enter the image, waiting for its blob as `wait` says; `None`
    /// when the bottom one is still being written and need not be waited for.
    pub fn next(&mut self, wait: Wait) -> Option<Result<Ready, BuildError>> {
        let writing = self
            .queued
            .iter()
            .filter(|q| matches!(q, Queued::Writing(_)))
            .count();
        let must_wait = match wait {
            Wait::Never => false,
            Wait::UntilWriting(at_most) => writing > at_most,
            Wait::All => true,
        };
        let ready = match self.queued.front()? {
            Queued::Ready(_) => true,
            Queued::Writing(pending) => pending.is_written(),
        };
        if !ready && !must_wait {
            return None;
        }
        Some(match self.queued.pop_front()? {
            Queued::Ready(ready) => Ok(*ready),
            Queued::Writing(pending) => {
                let layer = pending.layer.clone();
                pending.wait().map(|(entry, writing)| Ready {
                    seconds: entry.seconds + writing,
                    layer,
                    entry,
                    taken: Taken {
                        cached: false,
                        from_registry: false,
                    },
                })
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Instant;

    use super::*;

    fn layer(role: &str) -> RoleLayer {
        RoleLayer {
            role: role.into(),
            steps: Vec::new(),
            why: Vec::new(),
            started: Instant::now(),
        }
    }

    /// A layer whose blob is written when `go` is sent (or fails, when `fails`).
    fn writing(role: &str, fails: bool) -> (PendingLayer, mpsc::Sender<()>) {
        let (go, wait) = mpsc::channel::<()>();
        let writer = std::thread::spawn(move || {
            let _ = wait.recv();
            match fails {
                true => Err(BuildError::LayerWrite("the disk went away".into())),
                false => Ok((
                    Entry {
                        seconds: 2.0,
                        ..Entry::default()
                    },
                    0.5,
                )),
            }
        });
        (PendingLayer::from_writer(layer(role), writer), go)
    }

    fn ready(role: &str) -> Ready {
        Ready {
            layer: layer(role),
            entry: Entry::default(),
            taken: Taken {
                cached: true,
                from_registry: false,
            },
            seconds: 0.1,
        }
    }

    #[test]
    fn layers_come_out_in_order_and_only_written_unless_waited_for() {
        let mut queue = LayerQueue::default();
        let (first, go_first) = writing("first", false);
        queue.push_writing(first);
        queue.push_ready(ready("cached"));
        let (third, go_third) = writing("third", false);
        queue.push_writing(third);
        // The cached layer is ready, but the one below it is not written.
        assert!(queue.next(Wait::Never).is_none());
        assert!(queue.next(Wait::UntilWriting(2)).is_none());
        // Two are being written: waiting until one is waits for the bottom one.
        go_first.send(()).expect("go");
        let out = queue
            .next(Wait::UntilWriting(1))
            .expect("first")
            .expect("written");
        assert_eq!(out.layer.role, "first");
        assert!(!out.taken.cached);
        assert_eq!(out.seconds, 2.5, "the role's time and its writing's");
        let out = queue.next(Wait::Never).expect("cached").expect("ready");
        assert_eq!(out.layer.role, "cached");
        assert!(queue.next(Wait::UntilWriting(1)).is_none());
        go_third.send(()).expect("go");
        let out = queue.next(Wait::All).expect("third").expect("written");
        assert_eq!(out.layer.role, "third");
        assert!(queue.next(Wait::All).is_none());
    }

    #[test]
    fn a_failed_write_is_the_build_s_error() {
        let mut queue = LayerQueue::default();
        let (failing, go) = writing("failing", true);
        queue.push_writing(failing);
        go.send(()).expect("go");
        match queue.next(Wait::All) {
            Some(Err(error)) => assert!(error.to_string().contains("disk went away")),
            _ => panic!("the failure was lost"),
        }
    }
}
