//! Checks a finished image (a rootfs folder) the way Warewulf and a booting node need it:
//! one pinned kernel, modules built for it, a fresh `modules.dep`, MOFED and NVIDIA in place,
//! services enabled and disabled. Files are read only: nothing is loaded or booted.

pub mod checks;
pub mod modinfo;

pub use checks::{verify, Check, Expect, ModuleRecord, Report};
