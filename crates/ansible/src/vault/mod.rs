//! ansible-vault: vaulted values (`!vault |`) and vaulted files, decrypted as ansible-core 2.14
//! decrypts them, and kept out of everything imgbuild prints.
//!
//! The passwords come from `--vault-password-file`, `--vault-id [LABEL@]FILE` and
//! `ANSIBLE_VAULT_PASSWORD_FILE` ([`load`]). Every clear text decrypted is registered with
//! [`reveal`], and every output (the plan, errors, warnings, build events, cache keys) goes
//! through [`redact`] / [`redact_json`], which put a marker made from the ciphertext in its place:
//! `<vault:0123456789abcdef>`, the first 16 hex digits of the SHA-256 of the vault text.

mod crypto;
mod error;
pub mod fixtures;
mod passwords;
mod redact;

use std::fmt;
use std::sync::{Arc, Mutex};

pub use crypto::{DEFAULT_LABEL, HEADER};
pub use error::VaultError;
pub use passwords::{load, PasswordSources};
pub use redact::{is_vault_value, marker, redact, redact_json, reveal, PASSWORD_MARKER};

/// One password and the vault id (label) it was given for.
#[derive(Clone)]
pub struct VaultSecret {
    label: String,
    password: Vec<u8>,
}

impl VaultSecret {
    /// A password for `label` (`default` when given without one); it is registered for
    /// redaction, so it never shows in any output.
    pub fn new(label: &str, password: Vec<u8>) -> Self {
        reveal(&String::from_utf8_lossy(&password), PASSWORD_MARKER);
        Self {
            label: label.to_owned(),
            password,
        }
    }

    /// The vault id it was given for.
    pub fn label(&self) -> &str {
        &self.label
    }
}

impl fmt::Debug for VaultSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VaultSecret({}, <hidden>)", self.label)
    }
}

/// The passwords of one run, in the order they were given.
#[derive(Clone, Default)]
pub struct Vault {
    secrets: Arc<Vec<VaultSecret>>,
}

impl fmt::Debug for Vault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.secrets.iter().map(VaultSecret::label))
            .finish()
    }
}

/// Whether `bytes` is vaulted data: it starts with `$ANSIBLE_VAULT`, as Ansible tests it.
pub fn is_vaulted(bytes: &[u8]) -> bool {
    bytes.starts_with(HEADER.as_bytes())
}

impl Vault {
    /// A vault with these passwords.
    pub fn new(secrets: Vec<VaultSecret>) -> Self {
        Self {
            secrets: Arc::new(secrets),
        }
    }

    /// Whether no password was given.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// The clear bytes of a vaulted text. As Ansible, the passwords whose label is the
    /// envelope's are tried first, then the others in order.
    pub fn decrypt(&self, text: &str) -> Result<Vec<u8>, VaultError> {
        if self.secrets.is_empty() {
            return Err(VaultError::NoSecrets);
        }
        let envelope = crypto::Envelope::parse(text)?;
        let matching = self.secrets.iter().filter(|s| s.label == envelope.label);
        let others = self.secrets.iter().filter(|s| s.label != envelope.label);
        for secret in matching.chain(others) {
            if let Some(clear) = envelope.open(&secret.password)? {
                return Ok(clear);
            }
        }
        Err(VaultError::NoMatch {
            label: envelope.label,
            tried: self
                .secrets
                .iter()
                .map(|s| s.label.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// The clear text of a vaulted text, registered for redaction under the text's marker.
    pub fn decrypt_text(&self, text: &str) -> Result<String, VaultError> {
        let clear = String::from_utf8(self.decrypt(text)?).map_err(|_| VaultError::NotText)?;
        reveal(&clear, &marker(text));
        Ok(clear)
    }

    /// `bytes` as they are, or their clear bytes if they are vaulted (a `copy` source), and
    /// whether they were.
    pub fn open_file(&self, bytes: Vec<u8>) -> Result<(Vec<u8>, bool), VaultError> {
        if !is_vaulted(&bytes) {
            return Ok((bytes, false));
        }
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| VaultError::Format("the envelope is not ASCII".into()))?;
        Ok((self.decrypt(text)?, true))
    }
}

/// The passwords of this process, for what reads project files while building (the `copy`
/// module): set once by the command line, as Ansible's loader holds its secrets.
static PROCESS_VAULT: Mutex<Option<Vault>> = Mutex::new(None);

/// Sets the passwords this process decrypts with at build time.
pub fn set_process_vault(vault: Vault) {
    *PROCESS_VAULT.lock().unwrap_or_else(|e| e.into_inner()) = Some(vault);
}

/// The passwords set with [`set_process_vault`] (none if it was not called).
pub fn process_vault() -> Vault {
    PROCESS_VAULT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn decrypts_1_1_and_1_2_with_a_label() {
        let vault = vault("default");
        assert_eq!(vault.decrypt_text(V11).expect("1.1"), "unit-clear-1.1");
        // A password for another label is still tried, after the matching ones.
        assert_eq!(vault.decrypt_text(V12).expect("1.2"), "unit-clear-1.2");
        let file = vault.decrypt_text(FILE11).expect("file");
        assert_eq!(file, "a: 1\nb: two\n");
    }

    #[test]
    fn the_matching_label_is_tried_first_and_others_after() {
        let wrong = VaultSecret::new("prod", b"not-the-password".to_vec());
        let right = VaultSecret::new("dev", PASSWORD.as_bytes().to_vec());
        let vault = Vault::new(vec![right, wrong]);
        assert_eq!(vault.decrypt(V12).expect("found"), b"unit-clear-1.2");
    }

    #[test]
    fn no_password_and_a_wrong_one_are_errors() {
        assert_eq!(Vault::default().decrypt(V11), Err(VaultError::NoSecrets));
        let wrong = Vault::new(vec![VaultSecret::new("prod", b"nope-x".to_vec())]);
        let err = wrong.decrypt(V12).expect_err("wrong");
        let text = err.to_string();
        assert!(text.starts_with("Decryption failed"), "{text}");
        assert!(text.contains("'prod'") && !text.contains('\n'), "{text}");
        assert!(!text.contains("nope-x"), "the password is not in {text}");
    }

    #[test]
    fn debug_never_shows_a_password() {
        let vault = vault("default");
        let shown = format!("{vault:?} {:?}", vault.secrets[0]);
        assert!(!shown.contains(PASSWORD), "{shown}");
        assert!(shown.contains("default"), "{shown}");
    }

    #[test]
    fn open_file_passes_clear_files_through() {
        let vault = vault("default");
        let (bytes, vaulted) = vault.open_file(b"plain\n".to_vec()).expect("plain");
        assert_eq!((bytes.as_slice(), vaulted), (&b"plain\n"[..], false));
        let (bytes, vaulted) = vault
            .open_file(FILE11.as_bytes().to_vec())
            .expect("vaulted");
        assert_eq!((bytes.as_slice(), vaulted), (&b"a: 1\nb: two\n"[..], true));
    }
}
