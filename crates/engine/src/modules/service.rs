//! `service`: its run is in `systemd.rs`.

pub(crate) use super::systemd::service as run;
