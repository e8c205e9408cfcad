//! `apt`: its run is in `packages.rs`.

pub(crate) use super::packages::apt as run;
