//! `tempfile`: its run is in `inspect.rs`.

pub(crate) use super::inspect::tempfile as run;
