//! A kernel module's appended signature (`~Module signature appended~`, as `sign-file` writes
//! it): whether there is one and, for PKCS#7, the common name of the signer's issuer that
//! `modinfo` prints as `signer`. The signature itself is not checked here.

/// The magic at the very end of a signed module.
const MAGIC: &[u8] = b"~Module signature appended~\n";
/// `struct module_signature`: algo, hash, id_type, signer_len, key_id_len, pad[3], sig_len (be32).
const TRAILER: usize = 12;
/// The id type of a PKCS#7 signature.
const PKEY_ID_PKCS7: u8 = 2;
/// DER of the attribute type commonName (2.5.4.3).
const CN_OID: &[u8] = &[0x06, 0x03, 0x55, 0x04, 0x03];

/// A module's appended signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The signer's common name, when it could be read.
    pub signer: Option<String>,
}

/// The signature appended to the module `elf` (decompressed), if any.
pub fn appended(elf: &[u8]) -> Option<Signature> {
    let body = elf.strip_suffix(MAGIC)?;
    let trailer_at = body.len().checked_sub(TRAILER)?;
    let trailer = &body[trailer_at..];
    let sig_len = usize::try_from(u32::from_be_bytes(trailer[8..12].try_into().ok()?)).ok()?;
    let sig = body.get(trailer_at.checked_sub(sig_len)?..trailer_at)?;
    let signer = (trailer[2] == PKEY_ID_PKCS7)
        .then(|| first_common_name(sig))
        .flatten();
    Some(Signature { signer })
}

/// The first commonName in DER `der`: in a module's PKCS#7 (no certificates, as `sign-file`
/// writes it) that is the issuer of the one signer.
fn first_common_name(der: &[u8]) -> Option<String> {
    let at = der.windows(CN_OID.len()).position(|w| w == CN_OID)? + CN_OID.len();
    let tag = *der.get(at)?;
    // UTF8String, PrintableString, IA5String, T61String.
    if ![0x0c, 0x13, 0x16, 0x14].contains(&tag) {
        return None;
    }
    let len = usize::from(*der.get(at + 1)?);
    if len >= 0x80 {
        return None;
    }
    let text = der.get(at + 2..at + 2 + len)?;
    Some(String::from_utf8_lossy(text).into_owned())
}

/// `elf` with a PKCS#7-style signature naming `signer` appended (tests).
pub fn fake_signed(elf: &[u8], signer: &str) -> Vec<u8> {
    let mut sig = vec![0x30, 0x00];
    sig.extend_from_slice(CN_OID);
    sig.push(0x0c);
    sig.push(u8::try_from(signer.len()).unwrap_or(0));
    sig.extend_from_slice(signer.as_bytes());
    let mut out = elf.to_vec();
    out.extend_from_slice(&sig);
    out.extend_from_slice(&[0, 0, PKEY_ID_PKCS7, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&u32::try_from(sig.len()).unwrap_or(0).to_be_bytes());
    out.extend_from_slice(MAGIC);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signer_is_read_and_an_unsigned_module_has_none() {
        let elf = crate::modinfo::fake_module(&[("name", "x")]);
        assert_eq!(appended(&elf), None);
        let signed = fake_signed(&elf, "Site MOK");
        assert_eq!(
            appended(&signed).and_then(|s| s.signer).as_deref(),
            Some("Site MOK")
        );
        // A broken length is no signature, not a panic.
        let mut broken = signed.clone();
        let at = broken.len() - MAGIC.len() - 4;
        broken[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(appended(&broken), None);
    }
}
