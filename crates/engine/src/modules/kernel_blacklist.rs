//! `kernel_blacklist`: its run is in `hostconf.rs`.

pub(crate) use super::hostconf::kernel_blacklist as run;
