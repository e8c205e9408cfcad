//! Images: layers from folders, content-addressed blobs, OCI layout and docker-archive
//! outputs, bases, and the layer cache.

pub mod apply;
pub mod atomic;
pub mod base;
pub mod blobs;
pub mod boot_record;
pub mod build;
pub mod cache;
#[cfg(test)]
mod code_identity;
pub mod compression;
pub mod dnf_base;
pub mod docker_archive;
pub mod freshness;
pub mod hashing;
pub mod layer;
mod layer_code;
pub mod oci;
pub mod pargz;
mod read_ahead;
pub mod report;
mod rootless_base;
pub mod signing;
pub mod snapshot;
pub mod timeline;
mod used;
