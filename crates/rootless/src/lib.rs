//! Rootless builds: imgbuild run by an ordinary user re-runs itself in a new user namespace in
//! which the user is root and the image's other ids are the user's subordinate range from
//! `/etc/subuid` and `/etc/subgid`, mapped by the setuid `newuidmap` and `newgidmap` of the
//! `uidmap` package (shadow-utils), as podman and buildah map them. Inside, the build runs
//! unchanged: it chroots, mounts (tmpfs, overlayfs with `userxattr`, binds) and chowns within
//! the range, and files get the owners the image sees, so its layers are the bytes root's
//! build writes.
//!
//! [`check`] says, before any work, why a machine cannot (no range, no `newuidmap`, user
//! namespaces turned off), each with the setting and the command that fixes it; [`run_inside`]
//! starts the namespace and waits for it; [`enter_if_child`] is the child's first step.

mod error;
mod mapping;
mod namespace;
mod subids;
mod sysctl;

pub use error::RootlessError;
pub use mapping::{check, is_root, Mapping, MIN_IDS};
pub use namespace::{enter_if_child, run_inside};
pub use subids::{IdRange, SubIds};
