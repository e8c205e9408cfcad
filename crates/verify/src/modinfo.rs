//! Reading a kernel module's `.modinfo` section (vermagic, depends, name) from its ELF file,
//! compressed or not (`.ko`, `.ko.xz`, `.ko.zst`, `.ko.gz`).

use std::io::Read;
use std::path::Path;

/// Why a module could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ModinfoError {
    /// Reading or decompressing failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Not an ELF file, or no `.modinfo`.
    #[error("{0}")]
    Format(String),
}

/// The `.modinfo` of a module.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Modinfo {
    /// `key=value` pairs in order (keys repeat, e.g. `alias`).
    pub fields: Vec<(String, String)>,
    /// The signature appended to the module, if any.
    pub signature: crate::signature::Signed,
}

impl Modinfo {
    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The kernel release the module was built for (first word of `vermagic`).
    pub fn kernel(&self) -> Option<&str> {
        self.get("vermagic")?.split_whitespace().next()
    }

    /// The module's name (`name=`, else none: take the file's).
    pub fn name(&self) -> Option<&str> {
        self.get("name")
    }

    /// The modules it depends on.
    pub fn depends(&self) -> Vec<&str> {
        self.get("depends")
            .map(|d| d.split(',').filter(|s| !s.is_empty()).collect())
            .unwrap_or_default()
    }
}

/// Whether a file name is a kernel module.
pub fn is_module(name: &str) -> bool {
    [".ko", ".ko.xz", ".ko.zst", ".ko.gz"]
        .iter()
        .any(|ext| name.ends_with(ext))
}

/// Reads the module file at `path`, decompressing by its name.
pub fn read_module(path: &Path) -> Result<Modinfo, ModinfoError> {
    let file = std::fs::File::open(path)?;
    read_module_from(&path.to_string_lossy(), file)
}

/// Reads a module named `name` (which tells its compression) from `reader`.
pub fn read_module_from(name: &str, reader: impl Read) -> Result<Modinfo, ModinfoError> {
    let mut bytes = Vec::new();
    if name.ends_with(".xz") {
        liblzma::read::XzDecoder::new_multi_decoder(reader).read_to_end(&mut bytes)?;
    } else if name.ends_with(".zst") {
        oci_layout::decompress::zstd(std::io::BufReader::new(reader))
            .map_err(|e| ModinfoError::Format(format!("zstd: {e}")))?
            .read_to_end(&mut bytes)?;
    } else if name.ends_with(".gz") {
        flate2::read::MultiGzDecoder::new(reader).read_to_end(&mut bytes)?;
    } else {
        let mut reader = reader;
        reader.read_to_end(&mut bytes)?;
    }
    let mut info = parse(&bytes)?;
    info.signature = crate::signature::read(&bytes);
    Ok(info)
}

// Offsets come from the file: every sum is checked (found by fuzzing: a section table near
// the top of the address space overflowed `at + 4`).
fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// Parses `.modinfo` out of an ELF64 little-endian object.
pub fn parse(elf: &[u8]) -> Result<Modinfo, ModinfoError> {
    let bad = |what: &str| ModinfoError::Format(format!("not a kernel module: {what}"));
    if elf.get(..4) != Some(b"\x7fELF") {
        return Err(bad("no ELF magic"));
    }
    if elf.get(4) != Some(&2) || elf.get(5) != Some(&1) {
        return Err(bad("not a 64-bit little-endian ELF"));
    }
    let shoff = usize::try_from(u64_at(elf, 0x28).ok_or_else(|| bad("cut short"))?)
        .map_err(|_| bad("offset"))?;
    let shentsize = usize::from(u16_at(elf, 0x3a).ok_or_else(|| bad("cut short"))?);
    let shnum = usize::from(u16_at(elf, 0x3c).ok_or_else(|| bad("cut short"))?);
    let shstrndx = usize::from(u16_at(elf, 0x3e).ok_or_else(|| bad("cut short"))?);
    if shentsize < 64 || shnum == 0 || shstrndx >= shnum {
        return Err(bad("bad section table"));
    }
    let section = |i: usize| -> Option<(u32, usize, usize)> {
        let at = shoff.checked_add(i.checked_mul(shentsize)?)?;
        let name = u32_at(elf, at)?;
        let offset = usize::try_from(u64_at(elf, at.checked_add(0x18)?)?).ok()?;
        let size = usize::try_from(u64_at(elf, at.checked_add(0x20)?)?).ok()?;
        Some((name, offset, size))
    };
    let (_, strtab_off, strtab_size) = section(shstrndx).ok_or_else(|| bad("bad section table"))?;
    let strtab = elf
        .get(strtab_off..strtab_off.saturating_add(strtab_size))
        .ok_or_else(|| bad("bad string table"))?;
    for i in 0..shnum {
        let (name, offset, size) = section(i).ok_or_else(|| bad("bad section header"))?;
        let name_bytes = strtab.get(name as usize..).unwrap_or_default();
        let end = name_bytes
            .iter()
            .position(|b| *b == 0)
            .unwrap_or(name_bytes.len());
        if &name_bytes[..end] == b".modinfo" {
            let data = elf
                .get(offset..offset.saturating_add(size))
                .ok_or_else(|| bad(".modinfo past the end"))?;
            let fields = data
                .split(|b| *b == 0)
                .filter(|s| !s.is_empty())
                .filter_map(|s| {
                    let text = String::from_utf8_lossy(s);
                    text.split_once('=')
                        .map(|(k, v)| (k.to_owned(), v.to_owned()))
                })
                .collect();
            return Ok(Modinfo {
                fields,
                signature: crate::signature::Signed::Unsigned,
            });
        }
    }
    Err(bad("no .modinfo section"))
}

/// A minimal ELF64 object with a `.modinfo` section holding `fields` (tests, fuzzing seeds).
pub fn fake_module(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut modinfo = Vec::new();
    for (k, v) in fields {
        modinfo.extend_from_slice(format!("{k}={v}").as_bytes());
        modinfo.push(0);
    }
    let shstrtab = b"\0.modinfo\0.shstrtab\0".to_vec();
    let modinfo_off = 64usize;
    let shstrtab_off = modinfo_off + modinfo.len();
    let shoff = shstrtab_off + shstrtab.len();
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2;
    elf[5] = 1;
    elf[6] = 1;
    elf[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
    elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
    elf[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
    elf[0x3e..0x40].copy_from_slice(&2u16.to_le_bytes());
    elf.extend_from_slice(&modinfo);
    elf.extend_from_slice(&shstrtab);
    let header = |name: u32, off: usize, size: usize| {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(&name.to_le_bytes());
        h[0x18..0x20].copy_from_slice(&(off as u64).to_le_bytes());
        h[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
        h
    };
    elf.extend(header(0, 0, 0));
    elf.extend(header(1, modinfo_off, modinfo.len()));
    elf.extend(header(10, shstrtab_off, shstrtab.len()));
    elf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzed_inputs_are_errors_not_panics() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz-corpus/modinfo");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).expect("the modinfo corpus") {
            let bytes = std::fs::read(entry.expect("entry").path()).expect("read");
            let _ = parse(&bytes);
            seen += 1;
        }
        assert!(seen >= 2, "the corpus holds the seed and the regression");
    }
    use std::io::Write;

    #[test]
    fn reads_vermagic_and_depends() {
        let elf = fake_module(&[
            ("name", "nvidia_peermem"),
            ("depends", "nvidia,ib_core"),
            (
                "vermagic",
                "6.1.0-50-amd64 SMP preempt mod_unload modversions ",
            ),
        ]);
        let info = parse(&elf).expect("modinfo");
        assert_eq!(info.kernel(), Some("6.1.0-50-amd64"));
        assert_eq!(info.depends(), vec!["nvidia", "ib_core"]);
    }

    #[test]
    fn compressed_modules() {
        let elf = fake_module(&[("vermagic", "5.14.0-503.40.1.el9_5.x86_64 SMP mod_unload")]);
        let dir = tempfile::tempdir().expect("tempdir");
        let xz = dir.path().join("m.ko.xz");
        let mut enc =
            liblzma::write::XzEncoder::new(std::fs::File::create(&xz).expect("create"), 6);
        enc.write_all(&elf).expect("write");
        enc.finish().expect("finish");
        assert_eq!(
            read_module(&xz).expect("xz").kernel(),
            Some("5.14.0-503.40.1.el9_5.x86_64")
        );
        let gz = dir.path().join("m.ko.gz");
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).expect("create"),
            flate2::Compression::default(),
        );
        enc.write_all(&elf).expect("write");
        enc.finish().expect("finish");
        assert_eq!(
            read_module(&gz).expect("gz").kernel(),
            Some("5.14.0-503.40.1.el9_5.x86_64")
        );
        // A zstd frame of one raw block, written by hand (no zstd encoder is needed to test the reader).
        // Frame header: single segment, 2-byte content size (stored minus 256).
        let mut zst = vec![0x28, 0xb5, 0x2f, 0xfd, 0x60];
        zst.extend_from_slice(&((elf.len() - 256) as u16).to_le_bytes());
        let block_header = ((elf.len() as u32) << 3) | 1;
        zst.extend_from_slice(&block_header.to_le_bytes()[..3]);
        zst.extend_from_slice(&elf);
        let zst_path = dir.path().join("m.ko.zst");
        std::fs::write(&zst_path, zst).expect("write");
        assert_eq!(
            read_module(&zst_path).expect("zst").kernel(),
            Some("5.14.0-503.40.1.el9_5.x86_64")
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bytes in [
            &b""[..],
            b"\x7fELF",
            b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0",
            &[0xffu8; 200][..],
        ] {
            assert!(parse(bytes).is_err());
        }
        let mut elf = fake_module(&[("vermagic", "x")]);
        elf[0x28] = 0xff;
        elf[0x2f] = 0x7f;
        assert!(parse(&elf).is_err());
    }
}
