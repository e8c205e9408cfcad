//! `package`: its run is in `packages.rs`.

pub(crate) use super::packages::package as run;
