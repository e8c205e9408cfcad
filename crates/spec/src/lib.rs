//! The image's own vocabulary, on the ground floor: each word one typed home that the planner
//! writes and image, verify, boot and the SBOM read, so none defines it again or maps one copy
//! onto another.
//!
//! - [`BaseKind`]: where an image's bottom layers come from (the recipe's `bootstrap`).
//! - [`NvidiaFlavor`]: which NVIDIA kernel modules an image carries.
//! - [`ImageLabels`]: what a build promises about its image, written as the image config's
//!   `io.imgbuild.*` labels and read back from them.

pub mod base;
pub mod flavor;
pub mod labels;

pub use base::BaseKind;
pub use flavor::NvidiaFlavor;
pub use labels::ImageLabels;
