//! What can go wrong talking to a registry. No message ever holds a password or a token.

/// A registry error.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// An image reference that does not parse.
    #[error("'{reference}' is not an image reference: {why}")]
    BadReference {
        /// The text given.
        reference: String,
        /// What is wrong.
        why: String,
    },
    /// The registry (or its token service) refused the credentials, or asked for some.
    #[error("{registry}: {detail}")]
    Unauthorized {
        /// The registry host.
        registry: String,
        /// What was tried and what to do.
        detail: String,
    },
    /// An HTTP status the operation cannot go on with.
    #[error("{what}: HTTP {status}{body}")]
    Status {
        /// The request, without credentials (`GET https://host/v2/repo/manifests/tag`).
        what: String,
        /// The status.
        status: u16,
        /// `: <registry's error message>` or empty.
        body: String,
    },
    /// No connection, a timeout, a TLS failure.
    #[error("{what}: {detail}")]
    Transport {
        /// The request.
        what: String,
        /// The transport error.
        detail: String,
    },
    /// Content whose sha256 differs from the digest that named it.
    #[error("{what}: the content's digest is {actual}, not {expected}; the registry or a proxy sent wrong data")]
    DigestMismatch {
        /// The blob or manifest.
        what: String,
        /// The digest asked for.
        expected: String,
        /// The digest of what arrived.
        actual: String,
    },
    /// A manifest or config that is not what the API says it must be.
    #[error("{what}: {detail}")]
    Invalid {
        /// What was read.
        what: String,
        /// What is wrong.
        detail: String,
    },
    /// No source of a reference (its registries.conf mirrors, its registry) gave it.
    #[error("{reference}: {hint}; tried {}", tried.join("; "))]
    Unavailable {
        /// The reference as written.
        reference: String,
        /// Each source and what it answered.
        tried: Vec<String>,
        /// What to do.
        hint: String,
    },
    /// The registry does not offer what was asked (a delete where deleting is off).
    #[error("{what}: {hint}")]
    Unsupported {
        /// The request.
        what: String,
        /// What the registry said, and what to do.
        hint: String,
    },
    /// A local file could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RegistryError {
    let what = what.into();
    move |source| RegistryError::Io { what, source }
}
