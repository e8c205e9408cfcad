//! `user`: its run is in `users.rs`.

pub(crate) use super::users::user as run;
