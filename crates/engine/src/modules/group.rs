//! `group`: its run is in `users.rs`.

pub(crate) use super::users::group as run;
