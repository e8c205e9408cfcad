//! `shell`: its run is in `command.rs`.

pub(crate) use super::command::shell as run;
