//! What every reader and writer of OCI images shares, below all of them: the [`Digest`] of a
//! blob, parsed and checked (a known algorithm, hex of its length) before it names a file.

mod digest;

pub use digest::{Algorithm, Digest, DigestError};
