//! `timezone`: its run is in `hostconf.rs`.

pub(crate) use super::hostconf::timezone as run;
