//! The site package mirror: `mirror.toml` (written by hand) and URL joining.
//!
//! Downloads, `mirror.lock` and the content-addressed cache build on this crate.

mod config;
mod url;

pub use config::{MirrorConfig, MirrorConfigError, PathSettings};
pub use url::{collapse_path_slashes, join_url};
