//! `deb822_repository`: its run is in `repos.rs`.

pub(crate) use super::repos::deb822_repository as run;
