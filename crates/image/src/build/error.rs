//! Why a build failed.

use engine::executor::TaskFailure;

use crate::base::BaseError;

/// Why a build failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The base could not be had.
    #[error(transparent)]
    Base(#[from] BaseError),
    /// A task failed.
    #[error("{0}")]
    Task(Box<TaskFailure>),
    /// The base rootfs is not what the recipe says it is (its distribution or version).
    #[error("{0}")]
    Facts(String),
    /// The sandbox failed.
    #[error("{0}")]
    Sandbox(String),
    /// The image was built but verify found problems (no output was written; see the report).
    #[error("verify failed, so no output was written:\n{0}")]
    Verify(String),
    /// An output cannot be written where it was asked for.
    #[error("{0}")]
    Output(String),
    /// A layer could not be applied to a folder.
    #[error("applying layer {digest}: {message}")]
    Layer {
        /// The layer's digest.
        digest: String,
        /// What went wrong.
        message: String,
    },
    /// A layer's blob could not be written from its folder in the cache.
    #[error("{0}")]
    LayerWrite(String),
    /// The module-signing secret could not be given to a role.
    #[error(transparent)]
    Signing(#[from] crate::signing::SigningError),
    /// A step needs more disk than its filesystem has free (nothing of it was written).
    #[error("{0}")]
    NoSpace(String),
    /// Reading or writing files failed.
    #[error("{what}: {cause}")]
    Io {
        /// What was being done.
        what: String,
        /// The error (not a `source`: the message holds it, and printing the chain would say
        /// it twice).
        cause: std::io::Error,
    },
}

/// Turns an I/O error into a [`BuildError::Io`] saying what was being done.
pub(super) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BuildError {
    let what = what.into();
    move |cause| BuildError::Io { what, cause }
}
