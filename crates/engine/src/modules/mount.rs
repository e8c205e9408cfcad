//! `mount`: its run is in `hostconf.rs`.

pub(crate) use super::hostconf::mount as run;
