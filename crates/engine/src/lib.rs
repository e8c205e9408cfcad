//! Runs planned tasks inside a build rootfs.
//!
//! A [`target::Target`] runs commands and gives confined file access; [`sandbox::ChrootTarget`]
//! is the real one (a chroot in private namespaces). The [`executor::Executor`] runs a plan's
//! tasks role by role through the [`modules`].

pub mod become_target;
pub mod compile_cache;
pub mod costs;
pub mod events;
pub mod executor;
pub mod facts_check;
pub mod initramfs;
pub mod live_output;
pub mod package_cache;
pub mod pinned_uname;
pub mod sandbox;
pub mod sandbox_enter;

// The modules, and what they act through, live in their own crate; their paths here stay.
pub use ::modules;
pub use ::modules::{archive, become_user, rootfs, target, utc};
