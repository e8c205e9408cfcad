//! Modules signed at test time by `openssl cms` as the kernel's `sign-file` signs them
//! (detached CMS, binary, no certificates, no attributes unless asked), with keys made by
//! `openssl req`: the signature read back and checked against the right and the wrong key.

use std::path::Path;

use super::*;
use crate::modinfo::fake_module;
use crate::signing_fixture::{sign, signing_key};

fn cert(path: &Path) -> SignerCert {
    SignerCert::parse(&std::fs::read(path).expect("cert")).expect("a certificate")
}

fn signature(bytes: &[u8]) -> ModuleSignature {
    match read(bytes) {
        Signed::Signed(signature) => *signature,
        other => panic!("not signed: {other:?}"),
    }
}

#[test]
fn a_module_signed_as_sign_file_does_verifies_with_its_certificate_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (key, site) = signing_key(dir.path(), "site");
    let (other_key, other) = signing_key(dir.path(), "other");
    let module = fake_module(&[("name", "mlx5_core"), ("vermagic", "6.1.0-50-amd64 SMP")]);
    assert_eq!(read(&module), Signed::Unsigned);

    for extra in [&[][..], &["-noattr"], &["-noattr", "-keyid"]] {
        let signed = sign(&module, &key, &site, extra);
        let found = signature(&signed);
        assert_eq!(found.hash, HashAlg::Sha256);
        assert_eq!(cert(&site).check(&found), Ok(()), "{extra:?}");
        match cert(&other).check(&found) {
            Err(Mismatch::OtherKey(who)) => {
                assert!(
                    who.contains("site module signing key") || who.starts_with("key id"),
                    "{who}"
                )
            }
            wrong => panic!("{extra:?}: {wrong:?}"),
        }
        // The module's module info still reads: the signature is after the ELF's sections.
        let info = crate::modinfo::parse(&signed).expect("modinfo");
        assert_eq!(info.get("name"), Some("mlx5_core"));
    }

    // Another key's signature bytes under the site's name: names the site, fails the check.
    let mut forged = signature(&sign(&module, &key, &site, &["-noattr"]));
    forged.signature = signature(&sign(&module, &other_key, &other, &["-noattr"])).signature;
    assert_eq!(cert(&site).check(&forged), Err(Mismatch::Broken));

    // A byte of the module changed after signing.
    let mut tampered = sign(&module, &key, &site, &["-noattr"]);
    tampered[70] ^= 1;
    assert_eq!(
        cert(&site).check(&signature(&tampered)),
        Err(Mismatch::Broken)
    );
    let mut with_attrs = sign(&module, &key, &site, &[]);
    with_attrs[70] ^= 1;
    assert_eq!(
        cert(&site).check(&signature(&with_attrs)),
        Err(Mismatch::Broken)
    );
}

#[test]
fn a_broken_tail_is_unreadable_never_a_panic() {
    let mut cut = MAGIC.to_vec();
    assert!(matches!(read(&cut), Signed::Unreadable(_)));
    cut = vec![0u8; 20];
    cut[2] = PKEY_ID_PKCS7;
    cut[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
    cut.extend_from_slice(MAGIC);
    assert!(
        matches!(read(&cut), Signed::Unreadable(_)),
        "{:?}",
        read(&cut)
    );
    let mut garbage = vec![7u8; 40];
    garbage.extend_from_slice(&[0, 0, PKEY_ID_PKCS7, 0, 0, 0, 0, 0, 0, 0, 0, 16]);
    garbage.extend_from_slice(MAGIC);
    assert!(matches!(read(&garbage), Signed::Unreadable(_)));
}

#[test]
fn a_certificate_that_is_not_one_is_refused() {
    assert!(matches!(
        SignerCert::parse(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
        Err(CertError::Format(_))
    ));
    assert!(SignerCert::parse(b"hello").is_err());
}
