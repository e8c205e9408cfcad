//! The checksums `get_url` takes, as Ansible's does: `<algorithm>:<hex>` or
//! `<algorithm>:<URL of a checksum file>`, with any of hashlib's guaranteed algorithms Ansible
//! lists (`md5`, `sha1`, `sha224`, `sha256`, `sha384`, `sha512`).

use std::io::Read;

use sha2::Digest;

/// A hash algorithm a checksum names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Md5,
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

/// What each algorithm is called in a checksum.
const NAMES: &[(&str, Algorithm)] = &[
    ("md5", Algorithm::Md5),
    ("sha1", Algorithm::Sha1),
    ("sha224", Algorithm::Sha224),
    ("sha256", Algorithm::Sha256),
    ("sha384", Algorithm::Sha384),
    ("sha512", Algorithm::Sha512),
];

impl Algorithm {
    /// The algorithm of this name (lower case, as Ansible's hashlib names).
    pub fn named(name: &str) -> Option<Self> {
        NAMES.iter().find(|(n, _)| *n == name).map(|(_, a)| *a)
    }

    /// The number of hex digits of its digests.
    pub fn hex_len(self) -> usize {
        match self {
            Self::Md5 => 32,
            Self::Sha1 => 40,
            Self::Sha224 => 56,
            Self::Sha256 => 64,
            Self::Sha384 => 96,
            Self::Sha512 => 128,
        }
    }

    /// The hex digest of what `reader` reads.
    pub fn hex_digest(self, reader: &mut dyn Read) -> std::io::Result<String> {
        fn digest<D: Digest + std::io::Write>(reader: &mut dyn Read) -> std::io::Result<String> {
            let mut hasher = D::new();
            std::io::copy(reader, &mut hasher)?;
            Ok(hasher
                .finalize()
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect())
        }
        match self {
            Self::Md5 => digest::<md5::Md5>(reader),
            Self::Sha1 => digest::<sha1::Sha1>(reader),
            Self::Sha224 => digest::<sha2::Sha224>(reader),
            Self::Sha256 => digest::<sha2::Sha256>(reader),
            Self::Sha384 => digest::<sha2::Sha384>(reader),
            Self::Sha512 => digest::<sha2::Sha512>(reader),
        }
    }

    /// Whether `hex` has this algorithm's length and only hex digits.
    pub fn is_digest(self, hex: &str) -> bool {
        hex.len() == self.hex_len() && hex.chars().all(|c| c.is_ascii_hexdigit())
    }
}

/// The algorithm names, for messages.
pub fn algorithm_names() -> String {
    NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_gives_its_known_digest_of_abc() {
        let known = [
            (Algorithm::Md5, "900150983cd24fb0d6963f7d28e17f72"),
            (Algorithm::Sha1, "a9993e364706816aba3e25717850c26c9cd0d89d"),
            (
                Algorithm::Sha256,
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
        ];
        for (algorithm, hex) in known {
            let digest = algorithm.hex_digest(&mut &b"abc"[..]).expect("digest");
            assert_eq!(digest, hex, "{algorithm:?}");
            assert!(algorithm.is_digest(&digest));
        }
        for (name, algorithm) in NAMES {
            let digest = algorithm.hex_digest(&mut &b""[..]).expect("digest");
            assert_eq!(digest.len(), algorithm.hex_len(), "{name}");
            assert_eq!(Algorithm::named(name), Some(*algorithm));
        }
        assert_eq!(Algorithm::named("crc32"), None);
    }
}
