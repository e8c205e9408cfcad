//! The certificates a site's machines trust: the public roots ureq bundles, the system's store
//! (what `update-ca-certificates` and `update-ca-trust` write), `SSL_CERT_FILE` and
//! `SSL_CERT_DIR` as OpenSSL reads them, and for a registry the CA files of its `certs.d`
//! folder, as containers/image reads them; a client certificate (`*.cert` with its `*.key`)
//! found there is offered to that registry.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WantsClientCert;
use rustls::ConfigBuilder;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::unverified::AnyCertificate;

/// Where distributions keep the system's bundle; the first that exists is read.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
];

/// A certificate file that cannot be used.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum TrustError {
    /// It cannot be read.
    #[error("{path}: {why}; {what}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        why: String,
        /// Where it was named.
        what: String,
    },
    /// It holds no PEM certificate.
    #[error("{path} holds no PEM certificate ({what})")]
    NoCertificate {
        /// The file.
        path: String,
        /// Where it was named.
        what: String,
    },
    /// rustls refused the setup.
    #[error("TLS setup: {0}")]
    Tls(String),
}

/// The certificate files to trust beside the public roots.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// Files read if they are there (the system's bundle).
    optional: Vec<PathBuf>,
    /// Files that must hold certificates, with where they were named.
    required: Vec<(PathBuf, String)>,
    /// The client certificate and its key, offered when the server asks.
    identity: Option<(PathBuf, PathBuf)>,
}

impl Trust {
    /// What the system trusts: its bundle, `SSL_CERT_FILE`, every file of `SSL_CERT_DIR`.
    pub fn system() -> Result<Self, TrustError> {
        let mut trust = Trust::default();
        if let Some(bundle) = SYSTEM_BUNDLES.iter().map(Path::new).find(|p| p.is_file()) {
            trust.optional.push(bundle.to_owned());
        }
        if let Some(file) = std::env::var_os("SSL_CERT_FILE") {
            trust
                .required
                .push((PathBuf::from(file), "named by SSL_CERT_FILE".into()));
        }
        if let Some(dirs) = std::env::var_os("SSL_CERT_DIR") {
            for dir in std::env::split_paths(&dirs) {
                let entries = std::fs::read_dir(&dir).map_err(|e| TrustError::Unreadable {
                    path: dir.display().to_string(),
                    why: e.to_string(),
                    what: "named by SSL_CERT_DIR".into(),
                })?;
                let mut files: Vec<PathBuf> = entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.is_file())
                    .collect();
                files.sort();
                trust.optional.extend(files);
            }
        }
        Ok(trust)
    }

    /// Also trusts the CA certificates in `file` (`what` says where it was named).
    pub fn with_ca_file(mut self, file: &Path, what: &str) -> Self {
        self.required.push((file.to_owned(), what.to_owned()));
        self
    }

    /// Offers the client certificate in `cert` (PEM, its chain) with the key in `key`.
    pub fn with_client_certificate(mut self, cert: &Path, key: &Path) -> Self {
        self.identity = Some((cert.to_owned(), key.to_owned()));
        self
    }

    /// Also trusts the CA files (`*.crt`) of a registry's `certs.d` folders and offers the
    /// first client certificate (`X.cert` with `X.key`) found there, as containers/image does.
    pub fn with_certs_d(mut self, host: &str) -> Self {
        for dir in certs_d_dirs(host) {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut files: Vec<PathBuf> =
                entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            files.sort();
            for file in &files {
                if file.extension().is_some_and(|x| x == "crt") {
                    let what = format!("a CA of {host} in {}", dir.display());
                    self.required.push((file.clone(), what));
                }
                if file.extension().is_some_and(|x| x == "cert") && self.identity.is_none() {
                    self.identity = Some((file.clone(), file.with_extension("key")));
                }
            }
        }
        self
    }

    fn certificates(&self) -> Result<Vec<CertificateDer<'static>>, TrustError> {
        let mut found = Vec::new();
        for file in &self.optional {
            if let Ok(iter) = CertificateDer::pem_file_iter(file) {
                found.extend(iter.flatten());
            }
        }
        for (file, what) in &self.required {
            let unreadable = |why: String| TrustError::Unreadable {
                path: file.display().to_string(),
                why,
                what: what.clone(),
            };
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(file)
                .map_err(|e| unreadable(e.to_string()))?
                .collect::<Result<_, _>>()
                .map_err(|e| unreadable(e.to_string()))?;
            if certs.is_empty() {
                return Err(TrustError::NoCertificate {
                    path: file.display().to_string(),
                    what: what.clone(),
                });
            }
            found.extend(certs);
        }
        Ok(found)
    }

    /// A rustls client setup trusting the public roots and these certificates.
    pub fn client_config(&self) -> Result<Arc<rustls::ClientConfig>, TrustError> {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        // A system bundle may hold a certificate rustls cannot parse; the others still count.
        roots.add_parsable_certificates(self.certificates()?);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TrustError::Tls(e.to_string()))?
            .with_root_certificates(roots);
        self.finish(builder)
    }

    /// A rustls client setup that takes any server certificate (a host the site marks
    /// `insecure`), still offering the client certificate.
    pub fn unverified_config(&self) -> Result<Arc<rustls::ClientConfig>, TrustError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TrustError::Tls(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)));
        self.finish(builder)
    }

    fn finish(
        &self,
        builder: ConfigBuilder<rustls::ClientConfig, WantsClientCert>,
    ) -> Result<Arc<rustls::ClientConfig>, TrustError> {
        let Some((cert, key)) = &self.identity else {
            return Ok(Arc::new(builder.with_no_client_auth()));
        };
        let what = format!("the client certificate {}", cert.display());
        let unreadable = |path: &Path, why: String| TrustError::Unreadable {
            path: path.display().to_string(),
            why,
            what: what.clone(),
        };
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .map_err(|e| unreadable(cert, e.to_string()))?
            .collect::<Result<_, _>>()
            .map_err(|e| unreadable(cert, e.to_string()))?;
        if chain.is_empty() {
            return Err(TrustError::NoCertificate {
                path: cert.display().to_string(),
                what,
            });
        }
        // The key's own error text never reaches a message: only that it cannot be used.
        let private = PrivateKeyDer::from_pem_file(key).map_err(|_| {
            unreadable(
                key,
                "missing, unreadable or not a PEM private key (the key of a client certificate X.cert is X.key beside it)".into(),
            )
        })?;
        let config = builder.with_client_auth_cert(chain, private).map_err(|e| {
            TrustError::Tls(format!(
                "the client certificate {} and its key {} do not go together: {e}",
                cert.display(),
                key.display()
            ))
        })?;
        Ok(Arc::new(config))
    }
}

/// The `certs.d` folders of a registry `host[:port]`, as containers/image looks for them: the
/// user's, then the system's for containers and for docker.
pub fn certs_d_dirs(host: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(
            PathBuf::from(home)
                .join(".config/containers/certs.d")
                .join(host),
        );
    }
    dirs.push(Path::new("/etc/containers/certs.d").join(host));
    dirs.push(Path::new("/etc/docker/certs.d").join(host));
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_file_must_hold_certificates() {
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").expect("write");
        let trust = Trust::default().with_ca_file(&empty, "named by SSL_CERT_FILE");
        let err = trust.client_config().expect_err("no certificate");
        assert!(
            err.to_string().contains("holds no PEM certificate"),
            "{err}"
        );
        let missing = Trust::default().with_ca_file(&dir.path().join("nope.pem"), "test");
        assert!(missing.client_config().is_err());
        assert!(Trust::default().client_config().is_ok());
    }

    #[test]
    fn certs_d_is_looked_for_per_host_and_port() {
        let dirs = certs_d_dirs("registry.site:5000");
        assert!(dirs.contains(&PathBuf::from("/etc/containers/certs.d/registry.site:5000")));
        assert!(dirs.contains(&PathBuf::from("/etc/docker/certs.d/registry.site:5000")));
    }
}
