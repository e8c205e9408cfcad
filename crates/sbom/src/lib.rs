//! The SBOM of an image (CycloneDX 1.5 JSON), read from the image's files as `verify` reads
//! them: every OS package of dpkg's or rpm's database with its purl, the kernel, every out-of-tree
//! module as a `device-driver` (file, version, vermagic, srcversion, signer, sha256, the package
//! or installer it came from), firmware files with their sha256, the recipe's pins from the
//! image's labels and, in a build, the `mirror.lock` pins of what was downloaded. The same
//! image gives the same bytes. [`diff`] names what changed between an SBOM and an image.
//!
//! rpm's database is read too: SQLite (Rocky 9, rpm 4.16 and later) or Berkeley DB (Rocky 8).
//!
//! [`cargo`] writes the same format for imgbuild's own release: the crates its binary is made of.

pub mod cargo;
pub mod components;
pub mod diff;
pub mod document;
pub mod dpkg;
pub mod model;
pub mod purl;
pub mod rpm;

pub use diff::{diff, Difference};
pub use document::{build, parse, to_bytes, Download, Inputs};
pub use model::Bom;

/// The file name a build writes the SBOM to, beside its outputs.
pub const FILE_NAME: &str = "sbom.cdx.json";
/// The OCI artifact type of a CycloneDX JSON SBOM.
pub const ARTIFACT_TYPE: &str = "application/vnd.cyclonedx+json";

/// Why an SBOM could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SbomError {
    /// Not JSON, or not the shape of a CycloneDX document.
    #[error("not a CycloneDX JSON document: {0}")]
    Json(#[from] serde_json::Error),
    /// Another format.
    #[error("bomFormat is {0:?}, not \"CycloneDX\"")]
    NotCycloneDx(String),
    /// `Cargo.lock` is not TOML of the lock's shape.
    #[error("Cargo.lock: {0}")]
    Lock(String),
    /// `cargo metadata` has no such binary's package among the workspace's.
    #[error("no workspace package named {0:?} in cargo metadata's output")]
    NoSuchPackage(String),
}
