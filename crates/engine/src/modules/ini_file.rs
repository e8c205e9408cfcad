//! `ini_file`: its run is in `textedit.rs`.

pub(crate) use super::textedit::ini_file as run;
