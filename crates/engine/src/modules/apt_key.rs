//! `apt_key`: its run is in `repos.rs`.

pub(crate) use super::repos::apt_key as run;
