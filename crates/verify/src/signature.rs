//! The signature the kernel's `sign-file` (or DKMS, or a vendor installer) appends to a module:
//! the module, a PKCS#7 `SignedData`, a `struct module_signature` and the magic
//! `~Module signature appended~\n`. Read when the module is read; checked against a signing
//! certificate (the site's MOK) by the `modules_signed` rule, with the certificate's RSA key.

use cms::content_info::ContentInfo;
use cms::signed_data::{SignedData, SignerIdentifier, SignerInfo};
use der::asn1::ObjectIdentifier;
use der::{Decode, Encode};
use rsa::pkcs1::DecodeRsaPublicKey;
use rsa::{Pkcs1v15Sign, RsaPublicKey};
use sha2::{Digest, Sha256, Sha384, Sha512};
use x509_cert::ext::pkix::SubjectKeyIdentifier;
use x509_cert::Certificate;

/// What ends a signed module.
pub const MAGIC: &[u8] = b"~Module signature appended~\n";
/// `struct module_signature`'s size.
const INFO_LEN: usize = 12;
/// `id_type` of a PKCS#7 signature (`PKEY_ID_PKCS7`).
const PKEY_ID_PKCS7: u8 = 2;
const MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");
const SUBJECT_KEY_ID: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.14");
const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");

/// The hash a signature uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashAlg {
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

impl HashAlg {
    fn of(oid: ObjectIdentifier) -> Option<HashAlg> {
        match oid.to_string().as_str() {
            "2.16.840.1.101.3.4.2.1" => Some(HashAlg::Sha256),
            "2.16.840.1.101.3.4.2.2" => Some(HashAlg::Sha384),
            "2.16.840.1.101.3.4.2.3" => Some(HashAlg::Sha512),
            _ => None,
        }
    }

    fn digest(self, bytes: &[u8]) -> Vec<u8> {
        match self {
            HashAlg::Sha256 => Sha256::digest(bytes).to_vec(),
            HashAlg::Sha384 => Sha384::digest(bytes).to_vec(),
            HashAlg::Sha512 => Sha512::digest(bytes).to_vec(),
        }
    }

    fn scheme(self) -> Pkcs1v15Sign {
        match self {
            HashAlg::Sha256 => Pkcs1v15Sign::new::<Sha256>(),
            HashAlg::Sha384 => Pkcs1v15Sign::new::<Sha384>(),
            HashAlg::Sha512 => Pkcs1v15Sign::new::<Sha512>(),
        }
    }
}

/// How a signature names its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignerId {
    /// The certificate's issuer (DER, and as text) and serial number.
    IssuerSerial {
        /// The issuer's DER.
        issuer: Vec<u8>,
        /// The issuer as text (`CN=...`).
        issuer_text: String,
        /// The serial number's bytes.
        serial: Vec<u8>,
    },
    /// The certificate's subject key identifier.
    KeyId(Vec<u8>),
}

impl std::fmt::Display for SignerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignerId::IssuerSerial {
                issuer_text,
                serial,
                ..
            } => write!(f, "{issuer_text}, serial {}", hex(serial)),
            SignerId::KeyId(id) => write!(f, "key id {}", hex(id)),
        }
    }
}

/// A module's signature, as read from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleSignature {
    /// Who signed it.
    pub signer: SignerId,
    /// The hash it signs with.
    pub hash: HashAlg,
    /// The hash the RSA signature is over: the module's, or its signed attributes'.
    signed_digest: Vec<u8>,
    /// Signed attributes whose message digest is not the module's: a broken signature.
    digest_mismatch: bool,
    /// The RSA signature.
    signature: Vec<u8>,
}

/// What a module's tail says of its signature.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Signed {
    /// No signature appended.
    #[default]
    Unsigned,
    /// A signature, read.
    Signed(Box<ModuleSignature>),
    /// A signature that cannot be read (why).
    Unreadable(String),
}

impl Signed {
    /// Who signed it, as `modinfo`'s `signer` names it (the common name of the certificate's
    /// issuer, else the whole name or the key id); `None` for an unsigned module.
    pub fn signer_name(&self) -> Option<String> {
        match self {
            Signed::Unsigned => None,
            Signed::Unreadable(_) => Some("(unreadable signature)".into()),
            Signed::Signed(signature) => Some(match &signature.signer {
                SignerId::IssuerSerial { issuer_text, .. } => issuer_text
                    .split(',')
                    .find_map(|part| part.trim().strip_prefix("CN="))
                    .unwrap_or(issuer_text)
                    .to_owned(),
                other => other.to_string(),
            }),
        }
    }
}

/// Reads the signature appended to the module `bytes` (decompressed).
pub fn read(bytes: &[u8]) -> Signed {
    let Some(body) = bytes.strip_suffix(MAGIC) else {
        return Signed::Unsigned;
    };
    match parse(body) {
        Ok(signature) => Signed::Signed(Box::new(signature)),
        Err(why) => Signed::Unreadable(why),
    }
}

fn parse(body: &[u8]) -> Result<ModuleSignature, String> {
    let info_at = body
        .len()
        .checked_sub(INFO_LEN)
        .ok_or("cut short before its signature information")?;
    let info = &body[info_at..];
    if info[2] != PKEY_ID_PKCS7 {
        return Err(format!("key identifier type {} is not PKCS#7", info[2]));
    }
    let sig_len = u32::from_be_bytes([info[8], info[9], info[10], info[11]]) as usize;
    let sig_at = info_at
        .checked_sub(sig_len)
        .ok_or("its signature is longer than the module")?;
    let (module, pkcs7) = (&body[..sig_at], &body[sig_at..info_at]);
    let content = ContentInfo::from_der(pkcs7).map_err(|e| format!("PKCS#7: {e}"))?;
    let signed = content
        .content
        .decode_as::<SignedData>()
        .map_err(|e| format!("PKCS#7 SignedData: {e}"))?;
    let signer = signed
        .signer_infos
        .0
        .iter()
        .next()
        .ok_or("PKCS#7 with no signer")?;
    signature_of(signer, module)
}

fn signature_of(signer: &SignerInfo, module: &[u8]) -> Result<ModuleSignature, String> {
    let hash = HashAlg::of(signer.digest_alg.oid)
        .ok_or_else(|| format!("digest algorithm {} is not SHA-2", signer.digest_alg.oid))?;
    let module_digest = hash.digest(module);
    let (signed_digest, digest_mismatch) = match &signer.signed_attrs {
        None => (module_digest, false),
        Some(attrs) => {
            let said = attrs
                .iter()
                .find(|a| a.oid == MESSAGE_DIGEST)
                .and_then(|a| a.values.iter().next())
                .map(|v| v.value().to_vec());
            let der = attrs
                .to_der()
                .map_err(|e| format!("signed attributes: {e}"))?;
            (
                hash.digest(&der),
                said.as_deref() != Some(&module_digest[..]),
            )
        }
    };
    let signer_id = match &signer.sid {
        SignerIdentifier::IssuerAndSerialNumber(is) => SignerId::IssuerSerial {
            issuer: is.issuer.to_der().map_err(|e| e.to_string())?,
            issuer_text: is.issuer.to_string(),
            serial: is.serial_number.as_bytes().to_vec(),
        },
        SignerIdentifier::SubjectKeyIdentifier(ski) => SignerId::KeyId(ski.0.as_bytes().to_vec()),
    };
    Ok(ModuleSignature {
        signer: signer_id,
        hash,
        signed_digest,
        digest_mismatch,
        signature: signer.signature.as_bytes().to_vec(),
    })
}

/// Why a certificate could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// Neither PEM nor DER X.509.
    #[error("not an X.509 certificate (PEM or DER): {0}")]
    Format(String),
    /// Not an RSA key.
    #[error("its key is not RSA ({0}); module signatures are checked with RSA keys")]
    NotRsa(String),
}

/// A certificate modules are signed with (the site's MOK).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignerCert {
    /// Its subject as text.
    pub subject: String,
    /// The sha256 of its DER, in hex.
    pub fingerprint: String,
    /// Its DER bytes (public: what the kernel's keyring and sign-file read).
    pub der: Vec<u8>,
    issuer: Vec<u8>,
    serial: Vec<u8>,
    key_id: Option<Vec<u8>>,
    key: RsaPublicKey,
}

/// Why a module's signature does not hold for a certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// Signed by another key (who).
    OtherKey(String),
    /// Signed by the certificate's key, but the signature does not verify.
    Broken,
}

impl SignerCert {
    /// Reads a certificate from PEM or DER bytes.
    pub fn parse(bytes: &[u8]) -> Result<SignerCert, CertError> {
        use x509_cert::der::DecodePem;
        let cert = Certificate::from_pem(bytes)
            .or_else(|_| Certificate::from_der(bytes))
            .map_err(|e| CertError::Format(e.to_string()))?;
        let tbs = &cert.tbs_certificate;
        let spki = &tbs.subject_public_key_info;
        if spki.algorithm.oid != RSA_ENCRYPTION {
            return Err(CertError::NotRsa(spki.algorithm.oid.to_string()));
        }
        let key = RsaPublicKey::from_pkcs1_der(spki.subject_public_key.raw_bytes())
            .map_err(|e| CertError::Format(e.to_string()))?;
        let key_id = tbs.extensions.iter().flatten().find_map(|ext| {
            (ext.extn_id == SUBJECT_KEY_ID)
                .then(|| SubjectKeyIdentifier::from_der(ext.extn_value.as_bytes()).ok())
                .flatten()
                .map(|ski| ski.0.as_bytes().to_vec())
        });
        let der = cert
            .to_der()
            .map_err(|e| CertError::Format(e.to_string()))?;
        Ok(SignerCert {
            subject: tbs.subject.to_string(),
            fingerprint: hex(&Sha256::digest(&der)),
            der: der.clone(),
            issuer: tbs
                .issuer
                .to_der()
                .map_err(|e| CertError::Format(e.to_string()))?,
            serial: tbs.serial_number.as_bytes().to_vec(),
            key_id,
            key,
        })
    }

    /// A certificate no signature matches, standing for one that could not be read (a damaged
    /// label): `modules_signed` stays on and fails, naming it.
    pub fn unreadable(what: &str) -> SignerCert {
        let shown: String = what.chars().take(16).collect();
        SignerCert {
            subject: format!("an unreadable certificate ({shown}...)"),
            fingerprint: String::new(),
            der: Vec::new(),
            issuer: Vec::new(),
            serial: Vec::new(),
            key_id: None,
            key: RsaPublicKey::new_unchecked(rsa::BigUint::from(1u8), rsa::BigUint::from(3u8)),
        }
    }

    /// Its RSA public key.
    pub fn public_key(&self) -> &RsaPublicKey {
        &self.key
    }

    /// Whether `signature` names this certificate and verifies with its key.
    pub fn check(&self, signature: &ModuleSignature) -> Result<(), Mismatch> {
        let ours = match &signature.signer {
            SignerId::IssuerSerial { issuer, serial, .. } => {
                *issuer == self.issuer && *serial == self.serial
            }
            SignerId::KeyId(id) => self.key_id.as_ref() == Some(id),
        };
        if !ours {
            return Err(Mismatch::OtherKey(signature.signer.to_string()));
        }
        if signature.digest_mismatch {
            return Err(Mismatch::Broken);
        }
        self.key
            .verify(
                signature.hash.scheme(),
                &signature.signed_digest,
                &signature.signature,
            )
            .map_err(|_| Mismatch::Broken)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
#[path = "signature_tests.rs"]
mod tests;
