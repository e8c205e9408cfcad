//! The module-signing build secret (`--secret id=module-signing,src=DIR`): the site's MOK
//! private key and certificate, given to the roles that build kernel modules while they run
//! and to nothing else.
//!
//! The key is checked against the certificate before any work, then copied, for each role
//! that builds modules, onto the sandbox's own `/run` (a tmpfs of the sandbox's mount
//! namespace, never the overlay's upper folder) and removed when the role's tasks are done;
//! the namespace, and the tmpfs with it, ends with the role's sandbox whatever happened. Its
//! bytes never enter a layer, the cache, a cache key, the report, an event or an error: those
//! see the paths below and the certificate's fingerprint, which keys the layers of the roles
//! that got it (a new key rebuilds them, the same key reuses them).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use engine::rootfs::RootFs;
use planner::Plan;
use verify::signing_key::KeyError;
use verify::SignerCert;

/// The secret's id in `--secret id=...`.
pub const SECRET_ID: &str = "module-signing";
/// Where a role finds the secret in its sandbox.
pub const INSIDE: &str = "/run/imgbuild/secrets/module-signing";
/// The private key in the sandbox (PEM, as given).
pub const KEY_INSIDE: &str = "/run/imgbuild/secrets/module-signing/key.pem";
/// The certificate in the sandbox (DER, what DKMS's `mok_certificate` and the kernel's
/// keyrings take; sign-file reads DER and PEM alike).
pub const CERT_INSIDE: &str = "/run/imgbuild/secrets/module-signing/cert.der";
/// The variables the roles read the two paths from (empty in the roles' defaults).
pub const KEY_VAR: &str = "module_signing_key";
/// See [`KEY_VAR`].
pub const CERT_VAR: &str = "module_signing_cert";
/// The recipe variable listing the roles that build modules and get the secret.
pub const ROLES_VAR: &str = "module_signing_roles";
/// Those roles when the recipe does not say: the two that compile modules.
pub const DEFAULT_ROLES: &[&str] = &["mofed", "nvidia"];
/// The names a private key may have in DIR: ours, DKMS's (`/var/lib/dkms`) and shim's
/// `mokutil` guide's (Ubuntu's `/var/lib/shim-signed/mok`). PEM, unencrypted.
pub const KEY_NAMES: &[&str] = &["key.pem", "mok.key", "MOK.priv"];
/// The names its certificate may have (PEM or DER).
pub const CERT_NAMES: &[&str] = &["cert.pem", "cert.der", "mok.pub", "MOK.der", "MOK.pem"];

/// Why the secret cannot be used (each names the file and what to do; none holds its bytes).
#[derive(Debug, thiserror::Error)]
pub enum SigningError {
    /// DIR cannot be read.
    #[error("--secret id=module-signing,src={dir}: {cause}: give a folder holding the site's module signing key and certificate")]
    Dir {
        /// The folder.
        dir: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// No key or no certificate, or more than one, in DIR.
    #[error("--secret id=module-signing,src={dir}: {found}; it must hold one private key named {} (PEM) and one certificate named {} (PEM or DER)", KEY_NAMES.join(", "), CERT_NAMES.join(", "))]
    Files {
        /// The folder.
        dir: PathBuf,
        /// What was found.
        found: String,
    },
    /// A file cannot be read.
    #[error("{file}: {cause}")]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The certificate is not one.
    #[error("{file}: {cause}: give the certificate of the module signing key (the site's MOK certificate)")]
    Cert {
        /// The file.
        file: PathBuf,
        /// Why.
        cause: verify::signature::CertError,
    },
    /// The key is not the certificate's, or not a key sign-file reads.
    #[error("{file}: {cause}")]
    Key {
        /// The key file.
        file: PathBuf,
        /// Why.
        cause: KeyError,
    },
    /// The secret could not be put in (or taken out of) a role's sandbox.
    #[error("the module signing secret in role {role}'s sandbox: {what}")]
    Sandbox {
        /// The role.
        role: String,
        /// What failed.
        what: String,
    },
}

/// The site's module signing key and certificate, checked; the key stays in its file.
#[derive(Debug, Clone)]
pub struct ModuleSigning {
    key: PathBuf,
    /// The certificate.
    pub cert: SignerCert,
}

impl ModuleSigning {
    /// Reads the certificate in `dir` and checks the key there is its key.
    pub fn load(dir: &Path) -> Result<ModuleSigning, SigningError> {
        let names: Vec<String> = std::fs::read_dir(dir)
            .map_err(|cause| SigningError::Dir {
                dir: dir.to_owned(),
                cause,
            })?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let one_of = |wanted: &[&str], what: &str| -> Result<PathBuf, SigningError> {
            let found: Vec<&String> = names
                .iter()
                .filter(|n| wanted.contains(&n.as_str()))
                .collect();
            match found.as_slice() {
                [one] => Ok(dir.join(one)),
                [] => Err(SigningError::Files {
                    dir: dir.to_owned(),
                    found: format!("no {what}"),
                }),
                several => Err(SigningError::Files {
                    dir: dir.to_owned(),
                    found: format!("{} files could be the {what}: {several:?}", several.len()),
                }),
            }
        };
        let key = one_of(KEY_NAMES, "private key")?;
        let cert_file = one_of(CERT_NAMES, "certificate")?;
        let read = |file: &Path| {
            std::fs::read(file).map_err(|cause| SigningError::Read {
                file: file.to_owned(),
                cause,
            })
        };
        let cert = SignerCert::parse(&read(&cert_file)?).map_err(|cause| SigningError::Cert {
            file: cert_file.clone(),
            cause,
        })?;
        let mut pem = read(&key)?;
        let pair = verify::signing_key::check_pair(&pem, &cert);
        pem.iter_mut().for_each(|b| *b = 0);
        pair.map_err(|cause| SigningError::Key {
            file: key.clone(),
            cause,
        })?;
        Ok(ModuleSigning { key, cert })
    }

    /// The certificate's fingerprint, `sha256:<hex>`: what keys the signing roles' layers.
    pub fn fingerprint(&self) -> String {
        format!("sha256:{}", self.cert.fingerprint)
    }

    /// The variables a build with the secret sets (`-e`'s precedence): the paths in the sandbox.
    pub fn vars() -> [(&'static str, &'static str); 2] {
        [(KEY_VAR, KEY_INSIDE), (CERT_VAR, CERT_INSIDE)]
    }

    /// Puts the key and certificate in the sandbox whose files `fs` reaches, on its own `/run`.
    pub(crate) fn install(&self, role: &str, fs: &RootFs) -> Result<(), SigningError> {
        let fail = |what: String| SigningError::Sandbox {
            role: role.to_owned(),
            what,
        };
        // The sandbox's /run is a mount of its namespace: on the host's view of the rootfs it is
        // another filesystem than the rootfs. Where it is not (no such view), the key would be
        // written into the folder the layer is read from: refused.
        let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
        let run = fs.root().join("run");
        if dev(&run).is_none() || dev(&run) == dev(fs.root()) {
            return Err(fail(
                "the sandbox's /run is not a filesystem of its own here (overlayfs is needed), so the key would land in the layer; build where overlayfs can be mounted".into(),
            ));
        }
        fs.mkdir_all(Path::new(INSIDE), 0o700)
            .map_err(|e| fail(e.to_string()))?;
        fs.copy_in(&self.key, Path::new(KEY_INSIDE), Some(0o400))
            .map_err(|e| fail(format!("copying {}: {}", self.key.display(), e.source)))?;
        fs.write_atomic(Path::new(CERT_INSIDE), &self.cert.der, Some(0o444))
            .map_err(|e| fail(e.to_string()))
    }

    /// Takes them out again (the sandbox's end would drop them anyway).
    pub(crate) fn remove(role: &str, fs: &RootFs) -> Result<(), SigningError> {
        fs.remove_all(Path::new("/run/imgbuild/secrets"))
            .map(drop)
            .map_err(|e| SigningError::Sandbox {
                role: role.to_owned(),
                what: e.to_string(),
            })
    }
}

/// The roles of `plan` that get the secret: the recipe's `module_signing_roles`, else
/// [`DEFAULT_ROLES`]. A role is named as in the recipe or by its last path part.
pub fn signing_roles(plan: &Plan) -> Vec<String> {
    let listed: Option<Vec<String>> = plan.vars.get(ROLES_VAR).map(|v| match v {
        serde_json::Value::Array(items) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect(),
        serde_json::Value::String(one) => one
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    });
    let listed = listed.unwrap_or_else(|| DEFAULT_ROLES.iter().map(|r| (*r).to_owned()).collect());
    plan.roles
        .iter()
        .filter(|role| {
            let last = role.rsplit('/').next().unwrap_or(role);
            listed.iter().any(|l| l == *role || l == last)
        })
        .cloned()
        .collect()
}

#[cfg(test)]
#[path = "signing_tests.rs"]
mod tests;
