//! The `$ANSIBLE_VAULT;1.1;AES256` / `;1.2;AES256;LABEL` format, as ansible-core 2.14 reads it
//! (`lib/ansible/parsing/vault/__init__.py`, `VaultAES256`).
//!
//! The envelope is a header line and the hexlified text of three lines: the hexlified salt, the
//! hexlified HMAC and the hexlified ciphertext. PBKDF2-HMAC-SHA256 (10000 iterations) turns the
//! password and salt into 80 bytes: the AES-256 key, the HMAC-SHA256 key and the 16-byte initial
//! counter. The HMAC is over the ciphertext; the cipher is AES-256-CTR over PKCS#7-padded text.

use aes::Aes256;
use ctr::cipher::{KeyIvInit, StreamCipher};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::error::VaultError;

/// The header every vaulted text starts with.
pub const HEADER: &str = "$ANSIBLE_VAULT";

/// Ansible's `C.DEFAULT_VAULT_IDENTITY`: the label of a 1.1 envelope and of a password given
/// without one.
pub const DEFAULT_LABEL: &str = "default";

const ITERATIONS: u32 = 10_000;
const KEY_LEN: usize = 32;
const IV_LEN: usize = 16;

/// A parsed envelope: the label it names and the three decoded parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// `1.2`'s label, or `default` for `1.1`.
    pub label: String,
    salt: Vec<u8>,
    hmac: Vec<u8>,
    ciphertext: Vec<u8>,
}

fn format_error(what: &str) -> VaultError {
    VaultError::Format(what.to_owned())
}

/// Decodes hex digits (upper or lower case), as Python's `unhexlify`.
fn unhex(text: &[u8], what: &str) -> Result<Vec<u8>, VaultError> {
    if text.len() % 2 == 1 {
        return Err(format_error(&format!("{what}: odd-length hex")));
    }
    let digit = |c: u8| -> Result<u8, VaultError> {
        (c as char)
            .to_digit(16)
            .map(|d| d as u8)
            .ok_or_else(|| format_error(&format!("{what}: not hex")))
    };
    text.chunks(2)
        .map(|pair| Ok(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

impl Envelope {
    /// Parses the header and the hexlified body of a vaulted text.
    pub fn parse(text: &str) -> Result<Self, VaultError> {
        let mut lines = text.trim_start().lines();
        let header = lines.next().unwrap_or_default().trim();
        let parts: Vec<&str> = header.split(';').map(str::trim).collect();
        if parts.first() != Some(&HEADER) || parts.len() < 3 {
            return Err(format_error(
                "the header is not $ANSIBLE_VAULT;VERSION;CIPHER",
            ));
        }
        if parts[2] != "AES256" {
            return Err(VaultError::Format(format!(
                "cipher '{}' could not be found (only AES256 is)",
                parts[2]
            )));
        }
        let label = parts
            .get(3)
            .filter(|l| !l.is_empty())
            .map_or(DEFAULT_LABEL, |l| l)
            .to_owned();
        let body: String = lines.flat_map(|l| l.trim().chars()).collect();
        let inner = unhex(body.as_bytes(), "vaulttext")?;
        let mut fields = inner.splitn(3, |b| *b == b'\n');
        let (Some(salt), Some(hmac), Some(ciphertext)) =
            (fields.next(), fields.next(), fields.next())
        else {
            return Err(format_error(
                "the vaulttext has no salt, HMAC and ciphertext lines",
            ));
        };
        Ok(Self {
            label,
            salt: unhex(salt, "salt")?,
            hmac: unhex(hmac, "HMAC")?,
            ciphertext: unhex(ciphertext, "ciphertext")?,
        })
    }

    /// The clear text with `password`, or `None` when the HMAC says it is the wrong one.
    pub fn open(&self, password: &[u8]) -> Result<Option<Vec<u8>>, VaultError> {
        let mut derived = [0u8; 2 * KEY_LEN + IV_LEN];
        pbkdf2::pbkdf2_hmac::<Sha256>(password, &self.salt, ITERATIONS, &mut derived);
        let (cipher_key, rest) = derived.split_at(KEY_LEN);
        let (hmac_key, iv) = rest.split_at(KEY_LEN);
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(hmac_key)
            .map_err(|_| format_error("HMAC key"))?;
        mac.update(&self.ciphertext);
        if mac.verify_slice(&self.hmac).is_err() {
            return Ok(None);
        }
        let mut text = self.ciphertext.clone();
        let mut cipher = ctr::Ctr128BE::<Aes256>::new(cipher_key.into(), iv.into());
        cipher.apply_keystream(&mut text);
        unpad(&mut text)?;
        Ok(Some(text))
    }
}

/// Removes PKCS#7 padding (128-bit blocks).
fn unpad(text: &mut Vec<u8>) -> Result<(), VaultError> {
    let n = usize::from(text.last().copied().unwrap_or(0));
    let valid = (1..=16).contains(&n)
        && n <= text.len()
        && text[text.len() - n..].iter().all(|b| usize::from(*b) == n);
    if !valid {
        return Err(format_error("invalid padding bytes"));
    }
    text.truncate(text.len() - n);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::vault::fixtures::{PASSWORD, V11};

    #[test]
    fn opens_a_1_1_envelope_made_by_ansible_vault() {
        let envelope = Envelope::parse(V11).expect("envelope");
        assert_eq!(envelope.label, "default");
        let clear = envelope.open(PASSWORD.as_bytes()).expect("format");
        assert_eq!(clear.as_deref(), Some(&b"unit-clear-1.1"[..]));
    }

    #[test]
    fn a_wrong_password_fails_the_hmac() {
        let envelope = Envelope::parse(V11).expect("envelope");
        assert_eq!(envelope.open(b"imgbuild-unit-pasS").expect("format"), None);
    }

    #[test]
    fn a_broken_envelope_is_a_format_error() {
        assert!(matches!(
            Envelope::parse("$ANSIBLE_VAULT;1.1;AES256\nzz\n"),
            Err(VaultError::Format(_))
        ));
        assert!(matches!(
            Envelope::parse("$ANSIBLE_VAULT;1.1;DES\n00\n"),
            Err(VaultError::Format(m)) if m.contains("DES")
        ));
        assert!(Envelope::parse("not a vault").is_err());
    }

    #[test]
    fn padding_is_checked() {
        let mut good = b"abc\x02\x02".to_vec();
        unpad(&mut good).expect("padding");
        assert_eq!(good, b"abc");
        assert!(unpad(&mut b"abc\x03\x02".to_vec()).is_err());
        assert!(unpad(&mut b"abc\x00".to_vec()).is_err());
    }
}
