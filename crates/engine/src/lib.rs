//! Runs planned tasks inside a build rootfs.
pub mod archive;
pub mod modules;
pub mod rootfs;
pub mod sandbox;
pub mod target;
