//! The image's own vocabulary, on the ground floor: each word one typed home that the planner
//! writes and image, verify, boot and the SBOM read, so none defines it again or maps one copy
//! onto another.
//!
//! - [`NvidiaFlavor`]: which NVIDIA kernel modules an image carries.
//! - [`ImageLabels`]: what a build promises about its image, written as the image config's
//!   `io.imgbuild.*` labels and read back from them.

pub mod flavor;
pub mod labels;

pub use flavor::NvidiaFlavor;
pub use labels::ImageLabels;
