//! A blob's digest, `<algorithm>:<hex>`, checked when parsed so it can safely become a path
//! (`blobs/<algorithm>/<hex>`): nothing but lowercase hex of the algorithm's length is kept.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The digest algorithms OCI registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// SHA-256: 64 hex digits.
    Sha256,
    /// SHA-512: 128 hex digits.
    Sha512,
}

impl Algorithm {
    /// Its name in a digest (`sha256`) and in a layout's `blobs/` folder.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha512 => "sha512",
        }
    }

    /// How many hex digits its digests have.
    pub fn hex_len(self) -> usize {
        match self {
            Algorithm::Sha256 => 64,
            Algorithm::Sha512 => 128,
        }
    }

    fn of_name(name: &str) -> Option<Algorithm> {
        match name {
            "sha256" => Some(Algorithm::Sha256),
            "sha512" => Some(Algorithm::Sha512),
            _ => None,
        }
    }
}

/// Why a text is no digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DigestError {
    /// The text has no `algorithm:` part, or names an algorithm OCI does not register.
    #[error("'{0}' is not a digest: it names no known algorithm (sha256:<hex> or sha512:<hex>)")]
    Algorithm(String),
    /// A valid digest of an algorithm the place asked of does not keep (a `sha256`-only store).
    #[error("'{digest}': {} blobs are not kept here, only sha256", .algorithm.name())]
    Unsupported {
        /// The digest.
        digest: String,
        /// Its algorithm.
        algorithm: Algorithm,
    },
    /// The hex part is not lowercase hex of the algorithm's length.
    #[error("'{digest}' is not a {} digest: it needs {} lowercase hex digits", .algorithm.name(), .algorithm.hex_len())]
    Hex {
        /// The text given.
        digest: String,
        /// The algorithm it names.
        algorithm: Algorithm,
    },
}

/// A checked blob digest (`sha256:<64 lowercase hex>`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest {
    algorithm: Algorithm,
    /// The whole text, `algorithm:hex`.
    text: String,
}

impl Digest {
    /// Parses and checks `text`.
    pub fn parse(text: &str) -> Result<Digest, DigestError> {
        let (name, hex) = text
            .split_once(':')
            .ok_or_else(|| DigestError::Algorithm(text.to_owned()))?;
        let algorithm =
            Algorithm::of_name(name).ok_or_else(|| DigestError::Algorithm(text.to_owned()))?;
        let lower_hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
        if hex.len() != algorithm.hex_len() || !hex.bytes().all(lower_hex) {
            return Err(DigestError::Hex {
                digest: text.to_owned(),
                algorithm,
            });
        }
        Ok(Digest {
            algorithm,
            text: text.to_owned(),
        })
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The hex part.
    pub fn hex(&self) -> &str {
        &self.text[self.algorithm.name().len() + 1..]
    }

    /// The whole digest, `algorithm:hex`.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Its file under a blob folder `blobs` (an OCI layout's `blobs/`, a cache's blob store):
    /// `blobs/<algorithm>/<hex>`.
    pub fn blob_path(&self, blobs: &Path) -> PathBuf {
        blobs.join(self.algorithm.name()).join(self.hex())
    }

    /// The digest, when its algorithm is SHA-256 (what a `sha256`-only store keeps).
    pub fn sha256(self) -> Result<Digest, DigestError> {
        match self.algorithm {
            Algorithm::Sha256 => Ok(self),
            algorithm => Err(DigestError::Unsupported {
                digest: self.text,
                algorithm,
            }),
        }
    }

    /// Its member name in an OCI layout, folder or tar: `blobs/<algorithm>/<hex>`.
    pub fn layout_member(&self) -> String {
        format!("blobs/{}/{}", self.algorithm.name(), self.hex())
    }
}

impl FromStr for Digest {
    type Err = DigestError;

    fn from_str(text: &str) -> Result<Digest, DigestError> {
        Digest::parse(text)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl AsRef<str> for Digest {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_sha256_digest_becomes_its_blob_path() {
        let digest = Digest::parse(&format!("sha256:{HEX}")).expect("digest");
        assert_eq!(digest.hex(), HEX);
        assert_eq!(digest.algorithm(), Algorithm::Sha256);
        assert_eq!(
            digest.blob_path(Path::new("layout/blobs")),
            Path::new("layout/blobs/sha256").join(HEX)
        );
        assert_eq!(digest.layout_member(), format!("blobs/sha256/{HEX}"));
        assert_eq!(digest.to_string(), format!("sha256:{HEX}"));
    }

    #[test]
    fn a_sha512_digest_has_128_hex_digits() {
        let hex = HEX.repeat(2);
        assert!(Digest::parse(&format!("sha512:{hex}")).is_ok());
        assert!(Digest::parse(&format!("sha512:{HEX}")).is_err());
    }

    #[test]
    fn texts_that_would_leave_the_blob_folder_are_refused() {
        for text in [
            "",
            HEX,
            "md5:0123",
            "sha256:../../etc/passwd",
            "sha256:",
            &format!("sha256:{}", HEX.to_uppercase()),
            &format!("sha256:{HEX}/"),
            &format!("sha256:{}", &HEX[1..]),
            &format!("sha256:/{}", &HEX[1..]),
        ] {
            assert!(Digest::parse(text).is_err(), "{text} was taken");
        }
    }

    #[test]
    fn a_sha256_only_store_refuses_sha512() {
        let sha512 = Digest::parse(&format!("sha512:{}", HEX.repeat(2))).expect("digest");
        assert!(matches!(
            sha512.sha256(),
            Err(DigestError::Unsupported {
                algorithm: Algorithm::Sha512,
                ..
            })
        ));
        assert!(Digest::parse(&format!("sha256:{HEX}"))
            .expect("digest")
            .sha256()
            .is_ok());
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert!(matches!(
            Digest::parse("md5:00"),
            Err(DigestError::Algorithm(_))
        ));
        assert!(matches!(
            Digest::parse("sha256:00"),
            Err(DigestError::Hex {
                algorithm: Algorithm::Sha256,
                ..
            })
        ));
    }
}
