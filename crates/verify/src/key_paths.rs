//! Where private keys may be: the paths the snapshot keeps and `no_private_keys` reads, known to
//! both without either naming the other.

/// The folders where build tools leave keys.
pub(crate) const KEY_FOLDERS: &[&str] = &["/var/lib/dkms/", "/etc/pki/", "/root/"];

/// Whether `path` may hold a private key the rule reads (the snapshot keeps these files).
pub fn may_be_a_key(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    KEY_FOLDERS.iter().any(|f| path.starts_with(f))
        && (name == "mok.key"
            || [".key", ".priv", ".pem", ".der"]
                .iter()
                .any(|ext| name.ends_with(ext))
            || name.starts_with("id_"))
}
