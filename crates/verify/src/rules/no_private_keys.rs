//! `no_private_keys`: no private key in the image (a DKMS `mok.key` would let anyone with the
//! image sign modules every node trusts).

use super::rule::{Rule, Verdict};
use crate::image::Image;
pub use crate::key_paths::may_be_a_key;
use crate::key_paths::KEY_FOLDERS;

/// The rule.
pub struct PrivateKeys;

fn is_private(path: &str, bytes: &[u8]) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let text = String::from_utf8_lossy(bytes);
    name == "mok.key" || name.ends_with(".priv") || text.contains("PRIVATE KEY-----")
}

impl Rule for PrivateKeys {
    fn id(&self) -> &'static str {
        "no_private_keys"
    }

    fn summary(&self) -> &'static str {
        "no private key under `/var/lib/dkms`, `/etc/pki` or `/root` (`mok.key`, `*.priv`, a PEM private key): module signing keys stay with the site, never in the image"
    }

    fn check(&self, image: &Image) -> Verdict {
        let keys: Vec<&String> = image
            .snapshot
            .kept_files()
            .filter(|(path, bytes)| may_be_a_key(path) && is_private(path, bytes))
            .map(|(path, _)| path)
            .collect();
        if keys.is_empty() {
            Verdict::Pass(format!("no private key under {}", KEY_FOLDERS.join(", ")))
        } else {
            Verdict::Fail(format!(
                "{keys:?} hold private keys: remove them in the role that made them (DKMS makes /var/lib/dkms/mok.key when it signs); sign modules with a key given at build time that never enters a layer"
            ))
        }
    }
}
