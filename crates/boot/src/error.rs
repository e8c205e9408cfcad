//! Why a boot could not be made.

use std::path::{Path, PathBuf};

/// Why a boot could not be made.
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    /// The input is not a bootable image.
    #[error("{0}")]
    Input(String),
    /// A tool or device the boot needs is missing.
    #[error("{0}")]
    Missing(String),
    /// Reading or writing a file failed.
    #[error("{path}: {cause}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        cause: std::io::Error,
    },
}

impl BootError {
    /// An I/O error on `path`.
    pub(crate) fn io(path: &Path, cause: std::io::Error) -> BootError {
        BootError::Io {
            path: path.to_owned(),
            cause,
        }
    }
}
