//! `sysctl`: its run is in `hostconf.rs`.

pub(crate) use super::hostconf::sysctl as run;
