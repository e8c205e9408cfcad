//! Whether a private key is the one of a signing certificate, read without keeping it: the
//! build's module-signing secret is checked before any work, so a site that gave the wrong pair
//! learns it at once and not from a failed verify an hour later. Only the key's public part
//! (modulus and exponent) is read; nothing is signed or decrypted here, and no error holds
//! any of the key's bytes.

use der::Decode;
use rsa::traits::PublicKeyParts;
use rsa::BigUint;

use crate::signature::SignerCert;

/// Why a key does not go with a certificate.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    /// Not a PEM private key.
    #[error("not a PEM private key (PKCS#8 `BEGIN PRIVATE KEY` or PKCS#1 `BEGIN RSA PRIVATE KEY`), which the kernel's sign-file reads")]
    Format,
    /// A passphrase protects it.
    #[error("the key is encrypted (a passphrase protects it): sign-file and DKMS cannot ask for one during a build; give the key unencrypted (`openssl pkey -in KEY -out key.pem`) in a folder only the build can read")]
    Encrypted,
    /// Not an RSA key.
    #[error("the key is not RSA; module signatures are checked with RSA keys")]
    NotRsa,
    /// Another key than the certificate's.
    #[error("the key is not the certificate's ({subject}): give the private key the certificate was made for")]
    OtherKey {
        /// The certificate's subject.
        subject: String,
    },
}

const RSA_ENCRYPTION: der::asn1::ObjectIdentifier =
    der::asn1::ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");

/// Checks that the PEM private key `pem` is the key of `cert`.
pub fn check_pair(pem: &[u8], cert: &SignerCert) -> Result<(), KeyError> {
    let (label, mut der) = der::pem::decode_vec(pem).map_err(|_| KeyError::Format)?;
    let public = match label {
        "PRIVATE KEY" => rsa_public_of_pkcs8(&der),
        "RSA PRIVATE KEY" => rsa_public_of_pkcs1(&der),
        "ENCRYPTED PRIVATE KEY" => Err(KeyError::Encrypted),
        _ => Err(KeyError::Format),
    };
    // The key's bytes are not kept past this check.
    der.iter_mut().for_each(|b| *b = 0);
    let (n, e) = public?;
    if n == *cert.public_key().n() && e == *cert.public_key().e() {
        Ok(())
    } else {
        Err(KeyError::OtherKey {
            subject: cert.subject.clone(),
        })
    }
}

fn rsa_public_of_pkcs8(der: &[u8]) -> Result<(BigUint, BigUint), KeyError> {
    let info = rsa::pkcs8::PrivateKeyInfo::from_der(der).map_err(|_| KeyError::Format)?;
    if info.algorithm.oid != RSA_ENCRYPTION {
        return Err(KeyError::NotRsa);
    }
    rsa_public_of_pkcs1(info.private_key)
}

fn rsa_public_of_pkcs1(der: &[u8]) -> Result<(BigUint, BigUint), KeyError> {
    let key = rsa::pkcs1::RsaPrivateKey::from_der(der).map_err(|_| KeyError::Format)?;
    Ok((
        BigUint::from_bytes_be(key.modulus.as_bytes()),
        BigUint::from_bytes_be(key.public_exponent.as_bytes()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signing_fixture::signing_key;

    #[test]
    fn a_key_goes_with_its_certificate_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (key, cert) = signing_key(dir.path(), "site");
        let (other_key, _) = signing_key(dir.path(), "other");
        let cert = SignerCert::parse(&std::fs::read(cert).expect("cert")).expect("parse");
        let pem = std::fs::read(&key).expect("key");
        assert_eq!(check_pair(&pem, &cert), Ok(()));
        let other = std::fs::read(other_key).expect("key");
        let wrong = check_pair(&other, &cert).expect_err("another key");
        assert!(matches!(wrong, KeyError::OtherKey { .. }), "{wrong}");
        // PKCS#1, as older tools write it.
        let pkcs1 = dir.path().join("rsa.pem");
        let out = std::process::Command::new("openssl")
            .args(["rsa", "-traditional", "-in"])
            .arg(&key)
            .arg("-out")
            .arg(&pkcs1)
            .output()
            .expect("openssl rsa");
        assert!(out.status.success(), "{out:?}");
        let pkcs1 = std::fs::read(pkcs1).expect("pkcs1");
        assert!(String::from_utf8_lossy(&pkcs1).contains("BEGIN RSA PRIVATE KEY"));
        assert_eq!(check_pair(&pkcs1, &cert), Ok(()));
    }

    #[test]
    fn a_certificate_encrypted_or_foreign_key_is_refused_without_its_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (key, cert_path) = signing_key(dir.path(), "site");
        let cert_bytes = std::fs::read(&cert_path).expect("cert");
        let cert = SignerCert::parse(&cert_bytes).expect("parse");
        assert_eq!(check_pair(&cert_bytes, &cert), Err(KeyError::Format));
        let encrypted = dir.path().join("enc.pem");
        let out = std::process::Command::new("openssl")
            .args(["pkcs8", "-topk8", "-passout", "pass:x", "-in"])
            .arg(&key)
            .arg("-out")
            .arg(&encrypted)
            .output()
            .expect("openssl pkcs8");
        assert!(out.status.success(), "{out:?}");
        let encrypted = std::fs::read(encrypted).expect("encrypted");
        assert_eq!(check_pair(&encrypted, &cert), Err(KeyError::Encrypted));
        let ec = dir.path().join("ec.pem");
        let out = std::process::Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-out",
            ])
            .arg(&ec)
            .output()
            .expect("openssl genpkey");
        assert!(out.status.success(), "{out:?}");
        let ec = std::fs::read(ec).expect("ec");
        assert_eq!(check_pair(&ec, &cert), Err(KeyError::NotRsa));
        // No error text holds a line of the key.
        let pem = String::from_utf8(std::fs::read(&key).expect("key")).expect("utf-8");
        let body = pem.lines().nth(1).expect("a body line");
        for e in [KeyError::Format, KeyError::Encrypted, KeyError::NotRsa] {
            assert!(!e.to_string().contains(body));
        }
    }
}
