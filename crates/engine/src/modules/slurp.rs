//! `slurp`: its run is in `inspect.rs`.

pub(crate) use super::inspect::slurp as run;
