//! Checks a finished image the way Warewulf and a booting node need it: one pinned kernel,
//! modules built for it and resolved as `modprobe` resolves them, MOFED and NVIDIA as found in
//! the image, services enabled and disabled, no private keys. Files are read only: nothing is
//! loaded or booted. Every rule is a file under `rules/`, listed in [`rules::RULES`].

pub mod image;
pub mod inputs;
mod key_paths;
pub mod labels;
pub mod modinfo;
pub mod modprobe;
pub mod report;
pub mod rpmdb;
mod rpmdb_bdb;
pub mod rules;
pub mod signature;
pub mod signing_fixture;
pub mod signing_key;
pub mod snapshot;

pub use image::{Expect, KernelSource};
pub use report::{verify, Check, ModuleRecord, Report, Skipped};
pub use signature::SignerCert;
pub use snapshot::Snapshot;

/// Verifies the rootfs folder `root`.
pub fn verify_dir(root: &std::path::Path, image: &str, expect: &Expect) -> std::io::Result<Report> {
    Ok(verify(&Snapshot::from_dir(root)?, image, expect))
}
