//! Why a vaulted text could not be read.

/// Why a vaulted text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VaultError {
    /// Vaulted data, and no password to open it with.
    #[error("no vault password was given; pass --vault-password-file FILE or --vault-id [LABEL@]FILE (or set ANSIBLE_VAULT_PASSWORD_FILE)")]
    NoSecrets,
    /// None of the passwords opens it (Ansible's words).
    #[error("Decryption failed (no vault secrets were found that could decrypt): its vault id is '{label}' and the passwords given ({tried}) are wrong for it; check --vault-password-file / --vault-id")]
    NoMatch {
        /// The envelope's label.
        label: String,
        /// The labels of the passwords tried.
        tried: String,
    },
    /// Not a well-formed envelope.
    #[error("Vault format error: {0}")]
    Format(String),
    /// The clear text of a vaulted value is not UTF-8 text.
    #[error("the decrypted vault text is not UTF-8 text")]
    NotText,
    /// A password file or script could not give a password.
    #[error("{0}")]
    Password(String),
}
