//! `patch`: its run is in `textedit.rs`.

pub(crate) use super::textedit::patch as run;
