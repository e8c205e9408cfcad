//! `find`: its run is in `inspect.rs`.

pub(crate) use super::inspect::find as run;
