//! Shim's `MokList` written into a copy of OVMF's variable store, as `mokutil --import` and a
//! reboot through MokManager would leave it. The store is the firmware volume of EDK2's
//! authenticated variable format: a volume header (`_FVH`), a variable store header
//! (`gEfiAuthenticatedVariableGuid`, formatted and healthy), then variables, each a 60-byte
//! header (`0x55AA`, its state, attributes, count, time, key index, name and data sizes, vendor
//! GUID), its UTF-16LE name and its data, at 4-byte boundaries, up to the erased (`0xFF`) space.

/// Shim's vendor GUID, which owns `MokList`.
pub const SHIM_LOCK_GUID: [u8; 16] = guid(
    0x605d_ab50,
    0xe046,
    0x4300,
    [0xab, 0xb6, 0x3d, 0xd8, 0x10, 0xdd, 0x8b, 0x23],
);
/// `EFI_CERT_X509_GUID`: a signature list of DER certificates.
const CERT_X509_GUID: [u8; 16] = guid(
    0xa5c0_59a1,
    0x94e4,
    0x4aa7,
    [0x87, 0xb5, 0xab, 0x15, 0x5c, 0x2b, 0xf0, 0x72],
);
/// `gEfiAuthenticatedVariableGuid`: the store's format, with time-based authenticated headers.
const AUTHENTICATED_STORE_GUID: [u8; 16] = guid(
    0xaaf3_2c78,
    0x947b,
    0x439a,
    [0xa1, 0x80, 0x2e, 0x14, 0x4e, 0xc3, 0x77, 0x92],
);

/// Non-volatile and boot-service access only: shim deletes a `MokList` that the OS could have
/// written (one with the runtime attribute).
pub const NV_BS: u32 = 0x1 | 0x2;

const FV_SIGNATURE: &[u8; 4] = b"_FVH";
const START_ID: u16 = 0x55AA;
const VAR_ADDED: u8 = 0x3F;
const VAR_IN_DELETED_TRANSITION: u8 = 0xFE;
const VAR_DELETED: u8 = 0xFD;
const STORE_FORMATTED: u8 = 0x5A;
const STORE_HEALTHY: u8 = 0xFE;
const STORE_HEADER: usize = 28;
const VAR_HEADER: usize = 60;

/// A GUID in its EFI byte order (the first three fields little-endian).
const fn guid(a: u32, b: u16, c: u16, d: [u8; 8]) -> [u8; 16] {
    let a = a.to_le_bytes();
    let b = b.to_le_bytes();
    let c = c.to_le_bytes();
    [
        a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], d[0], d[1], d[2], d[3], d[4], d[5], d[6],
        d[7],
    ]
}

/// Why a variable could not be written.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VarStoreError {
    /// Not a variable store this code knows.
    #[error("not an OVMF variable store in EDK2's authenticated format: {0}")]
    Format(String),
    /// The store has no room for the variable.
    #[error("the variable store has {free} bytes free, {needed} are needed for {name}")]
    Full {
        /// The variable.
        name: String,
        /// Bytes it needs.
        needed: usize,
        /// Bytes left.
        free: usize,
    },
}

/// One variable found in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// Its offset in the file.
    pub offset: usize,
    /// Its state byte.
    pub state: u8,
    /// Its attributes.
    pub attributes: u32,
    /// Its name.
    pub name: String,
    /// Its vendor GUID.
    pub vendor: [u8; 16],
    /// Its data.
    pub data: Vec<u8>,
}

impl Variable {
    /// Whether it is the live copy (added, or added and being replaced).
    pub fn live(&self) -> bool {
        self.state == VAR_ADDED || self.state == VAR_ADDED & VAR_IN_DELETED_TRANSITION
    }
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn format_error(what: &str) -> VarStoreError {
    VarStoreError::Format(what.to_owned())
}

/// The variable store inside a firmware volume: where its variables start and end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Store {
    first: usize,
    end: usize,
}

impl Store {
    /// Reads the volume header and the store header.
    fn of(file: &[u8]) -> Result<Store, VarStoreError> {
        if file.get(40..44) != Some(&FV_SIGNATURE[..]) {
            return Err(format_error(
                "no firmware volume signature (_FVH) at byte 40",
            ));
        }
        let header_length = usize::from(u16_at(file, 48).unwrap_or(0));
        let fv_length = file
            .get(32..40)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .unwrap_or(0);
        if header_length < 56 || fv_length > file.len() as u64 {
            return Err(format_error(&format!(
                "its volume header says {header_length} header bytes of a {fv_length}-byte volume in a {}-byte file",
                file.len()
            )));
        }
        let store = header_length;
        if file.get(store..store + 16) != Some(&AUTHENTICATED_STORE_GUID[..]) {
            return Err(format_error(
                "the variable store is not in the authenticated format (gEfiAuthenticatedVariableGuid)",
            ));
        }
        let size = u32_at(file, store + 16).unwrap_or(0) as usize;
        let (format, state) = (file[store + 20], file[store + 21]);
        if format != STORE_FORMATTED || state != STORE_HEALTHY {
            return Err(format_error(&format!(
                "its store header says format {format:#04x}, state {state:#04x} (want 0x5a, 0xfe)"
            )));
        }
        let end = store + size;
        if end > file.len() || size < STORE_HEADER {
            return Err(format_error(&format!(
                "its store of {size} bytes at {store} does not fit the file"
            )));
        }
        Ok(Store {
            first: align4(store + STORE_HEADER),
            end,
        })
    }
}

fn align4(at: usize) -> usize {
    (at + 3) & !3
}

/// The variables of `file` (an OVMF `_VARS` image) in order, and where the free space starts.
pub fn variables(file: &[u8]) -> Result<(Vec<Variable>, usize), VarStoreError> {
    let store = Store::of(file)?;
    let mut found = Vec::new();
    let mut at = store.first;
    while at + VAR_HEADER <= store.end && u16_at(file, at) == Some(START_ID) {
        let name_size = u32_at(file, at + 36).unwrap_or(0) as usize;
        let data_size = u32_at(file, at + 40).unwrap_or(0) as usize;
        let name_at = at + VAR_HEADER;
        let data_at = name_at + name_size;
        let next = data_at + data_size;
        if next > store.end || !name_size.is_multiple_of(2) {
            return Err(format_error(&format!(
                "the variable at byte {at} runs past the store ({name_size}-byte name, {data_size}-byte data)"
            )));
        }
        let units: Vec<u16> = file[name_at..data_at]
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .take_while(|u| *u != 0)
            .collect();
        let mut vendor = [0u8; 16];
        vendor.copy_from_slice(&file[at + 44..at + 60]);
        found.push(Variable {
            offset: at,
            state: file[at + 2],
            attributes: u32_at(file, at + 4).unwrap_or(0),
            name: String::from_utf16_lossy(&units),
            vendor,
            data: file[data_at..next].to_vec(),
        });
        at = align4(next);
    }
    let free = at.min(store.end);
    if file[free..store.end].iter().any(|b| *b != 0xFF) {
        return Err(format_error(&format!(
            "the store's space after its last variable (byte {free}) is not erased"
        )));
    }
    Ok((found, free))
}

/// Writes the variable `name` (of `vendor`, with `attributes` and `data`) into `file`, in the
/// free space after the last variable; a live variable of the same name and vendor is marked
/// deleted, as the firmware does when it replaces one.
pub fn set_variable(
    file: &mut [u8],
    name: &str,
    vendor: [u8; 16],
    attributes: u32,
    data: &[u8],
) -> Result<(), VarStoreError> {
    let store = Store::of(file)?;
    let (existing, free) = variables(file)?;
    let mut utf16: Vec<u8> = name.encode_utf16().flat_map(u16::to_le_bytes).collect();
    utf16.extend([0, 0]);
    let needed = VAR_HEADER + utf16.len() + data.len();
    if free + needed > store.end {
        return Err(VarStoreError::Full {
            name: name.to_owned(),
            needed,
            free: store.end - free,
        });
    }
    for old in existing
        .iter()
        .filter(|v| v.live() && v.name == name && v.vendor == vendor)
    {
        file[old.offset + 2] &= VAR_DELETED;
    }
    let mut header = Vec::with_capacity(VAR_HEADER);
    header.extend(START_ID.to_le_bytes());
    header.extend([VAR_ADDED, 0]);
    header.extend(attributes.to_le_bytes());
    // Monotonic count, time stamp and public key index: unused by a variable that is not
    // time-based authenticated.
    header.extend([0u8; 8 + 16 + 4]);
    header.extend((utf16.len() as u32).to_le_bytes());
    header.extend((data.len() as u32).to_le_bytes());
    header.extend(vendor);
    let bytes = [header, utf16, data.to_vec()].concat();
    file[free..free + needed].copy_from_slice(&bytes);
    Ok(())
}

/// An `EFI_SIGNATURE_LIST` of type X.509 holding one DER certificate, owned by `owner`.
pub fn x509_signature_list(der: &[u8], owner: [u8; 16]) -> Vec<u8> {
    let signature_size = 16 + der.len();
    let mut list = Vec::with_capacity(28 + signature_size);
    list.extend(CERT_X509_GUID);
    list.extend(((28 + signature_size) as u32).to_le_bytes());
    list.extend(0u32.to_le_bytes());
    list.extend((signature_size as u32).to_le_bytes());
    list.extend(owner);
    list.extend(der);
    list
}

/// Enrolls `der` as shim's Machine Owner Key: `MokList`, non-volatile and boot-service only.
pub fn enroll_mok(file: &mut [u8], der: &[u8]) -> Result<(), VarStoreError> {
    let list = x509_signature_list(der, SHIM_LOCK_GUID);
    set_variable(file, "MokList", SHIM_LOCK_GUID, NV_BS, &list)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 16 KiB volume holding an empty authenticated store, as OVMF's `_VARS` images are laid
    /// out (a 72-byte volume header, then the store).
    fn empty_store() -> Vec<u8> {
        let mut file = vec![0xFFu8; 16384];
        file[..72].fill(0);
        file[32..40].copy_from_slice(&16384u64.to_le_bytes());
        file[40..44].copy_from_slice(FV_SIGNATURE);
        file[48..50].copy_from_slice(&72u16.to_le_bytes());
        file[72..88].copy_from_slice(&AUTHENTICATED_STORE_GUID);
        file[88..92].copy_from_slice(&8192u32.to_le_bytes());
        file[92..100].copy_from_slice(&[STORE_FORMATTED, STORE_HEALTHY, 0, 0, 0, 0, 0, 0]);
        file
    }

    #[test]
    fn guids_are_in_efi_byte_order() {
        assert_eq!(
            SHIM_LOCK_GUID[..8],
            [0x50, 0xab, 0x5d, 0x60, 0x46, 0xe0, 0x00, 0x43]
        );
        assert_eq!(CERT_X509_GUID[..4], [0xa1, 0x59, 0xc0, 0xa5]);
    }

    #[test]
    fn a_mok_is_appended_and_reads_back_with_its_list() {
        let mut file = empty_store();
        set_variable(&mut file, "Odd", [7; 16], 0x7, b"x").expect("one");
        enroll_mok(&mut file, b"DER-BYTES").expect("enrolled");
        let (vars, free) = variables(&file).expect("reads");
        assert_eq!(vars.len(), 2);
        // The first variable's 5 bytes of data leave the next one at a 4-byte boundary.
        assert_eq!(vars[0].offset, 100);
        assert_eq!(vars[1].offset, align4(100 + 60 + 8 + 1));
        let mok = &vars[1];
        assert_eq!(mok.name, "MokList");
        assert_eq!((mok.attributes, mok.state), (NV_BS, VAR_ADDED));
        assert_eq!(mok.vendor, SHIM_LOCK_GUID);
        assert_eq!(mok.data[..16], CERT_X509_GUID);
        assert_eq!(u32_at(&mok.data, 16), Some(28 + 16 + 9));
        assert_eq!(u32_at(&mok.data, 24), Some(16 + 9));
        assert_eq!(&mok.data[28..44], &SHIM_LOCK_GUID);
        assert_eq!(&mok.data[44..], b"DER-BYTES");
        assert_eq!(free, align4(mok.offset + 60 + 16 + mok.data.len()));
    }

    #[test]
    fn enrolling_again_replaces_the_earlier_list() {
        let mut file = empty_store();
        enroll_mok(&mut file, b"first").expect("first");
        enroll_mok(&mut file, b"second").expect("second");
        let (vars, _) = variables(&file).expect("reads");
        let live: Vec<&Variable> = vars.iter().filter(|v| v.live()).collect();
        assert_eq!(live.len(), 1);
        assert!(live[0].data.ends_with(b"second"));
        assert_eq!(vars[0].state, VAR_ADDED & VAR_DELETED);
    }

    #[test]
    fn a_full_store_is_refused_and_left_unchanged() {
        let mut file = empty_store();
        let before = file.clone();
        let error = enroll_mok(&mut file, &[0u8; 9000]).expect_err("no room");
        assert!(
            matches!(error, VarStoreError::Full { needed, .. } if needed > 9000),
            "{error}"
        );
        assert_eq!(file, before);
    }

    #[test]
    fn other_formats_are_refused() {
        let mut plain = empty_store();
        plain[40] = b'X';
        assert!(enroll_mok(&mut plain, b"c")
            .expect_err("no _FVH")
            .to_string()
            .contains("_FVH"));
        let mut unauthenticated = empty_store();
        unauthenticated[72] ^= 1;
        assert!(enroll_mok(&mut unauthenticated, b"c")
            .expect_err("other GUID")
            .to_string()
            .contains("authenticated"));
        let mut unhealthy = empty_store();
        unhealthy[93] = 0xFF;
        assert!(enroll_mok(&mut unhealthy, b"c").is_err());
        let mut dirty = empty_store();
        dirty[5000] = 0;
        assert!(variables(&dirty)
            .expect_err("not erased")
            .to_string()
            .contains("not erased"));
        assert!(variables(&[0u8; 10]).is_err());
    }
}
