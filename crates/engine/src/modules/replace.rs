//! `replace`: its run is in `textedit.rs`.

pub(crate) use super::textedit::replace as run;
