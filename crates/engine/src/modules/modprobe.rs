//! `modprobe`: its run is in `hostconf.rs`.

pub(crate) use super::hostconf::modprobe as run;
