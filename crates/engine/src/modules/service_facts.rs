//! `service_facts`: its run is in `inspect.rs`.

pub(crate) use super::inspect::service_facts as run;
