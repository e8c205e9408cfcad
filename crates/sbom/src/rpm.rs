//! rpm's database in the image: `rpmdb.sqlite` (rpm 4.16 and later, as Rocky 9 and Debian's
//! rpm write it), each package a header blob in its `Packages` table. The database and its
//! write-ahead log are kept by verify's snapshot; they are copied to a private folder and read
//! with SQLite there, and each header is parsed for the tags an SBOM names. Berkeley DB
//! databases (Rocky 8) are not read.

use std::path::Path;

use verify::Snapshot;

/// Where rpm keeps its database (Rocky 9's, and the sysimage folder newer rpms use).
pub const DATABASES: [&str; 2] = ["/var/lib/rpm", "/usr/lib/sysimage/rpm"];
const SQLITE: &str = "rpmdb.sqlite";

const NAME: u32 = 1000;
const VERSION: u32 = 1001;
const RELEASE: u32 = 1002;
const EPOCH: u32 = 1003;
const ARCH: u32 = 1022;
const SOURCE_RPM: u32 = 1044;
const INT32: u32 = 4;
const STRING: u32 = 6;

/// One package rpm has installed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Package {
    /// `NAME`.
    pub name: String,
    /// `VERSION-RELEASE`.
    pub version: String,
    /// `EPOCH`, when it has one.
    pub epoch: Option<u32>,
    /// `ARCH` (`noarch`, `x86_64`).
    pub arch: String,
    /// The source package's name (from `SOURCERPM`), else the package's.
    pub source: String,
}

/// The packages of the image's rpm database: `None` when it has none; an error when it has
/// one that cannot be read.
pub fn packages(snapshot: &Snapshot) -> Option<Result<Vec<Package>, String>> {
    let folder = DATABASES
        .iter()
        .find(|dir| snapshot.read(&format!("{dir}/{SQLITE}")).is_some())?;
    Some(read_database(snapshot, folder))
}

/// The files of the database in `folder` copied out and read.
fn read_database(snapshot: &Snapshot, folder: &str) -> Result<Vec<Package>, String> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let work = std::env::temp_dir().join(format!("imgbuild-rpmdb-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let result = copy_and_query(snapshot, folder, &work);
    let _ = std::fs::remove_dir_all(&work);
    result
}

fn copy_and_query(snapshot: &Snapshot, folder: &str, work: &Path) -> Result<Vec<Package>, String> {
    for suffix in ["", "-wal"] {
        if let Some(bytes) = snapshot.read(&format!("{folder}/{SQLITE}{suffix}")) {
            std::fs::write(work.join(format!("{SQLITE}{suffix}")), bytes)
                .map_err(|e| e.to_string())?;
        }
    }
    let db = rusqlite::Connection::open(work.join(SQLITE)).map_err(|e| e.to_string())?;
    let mut query = db
        .prepare("SELECT blob FROM Packages")
        .map_err(|e| format!("{folder}/{SQLITE}: {e}"))?;
    let blobs = query
        .query_map([], |row| row.get::<_, Vec<u8>>(0))
        .map_err(|e| e.to_string())?;
    let mut packages = Vec::new();
    for blob in blobs {
        let blob = blob.map_err(|e| e.to_string())?;
        if let Some(package) = header(&blob).filter(|p| p.name != "gpg-pubkey") {
            packages.push(package);
        }
    }
    packages.sort();
    Ok(packages)
}

/// A big-endian u32 of `bytes` at `at`.
fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(
        bytes.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// The package a header blob describes (index count, data length, the index, the data), or
/// `None` when it is not one.
pub fn header(blob: &[u8]) -> Option<Package> {
    let count = usize::try_from(be32(blob, 0)?).ok()?;
    let data_at = count.checked_mul(16)?.checked_add(8)?;
    let data = blob.get(data_at..)?;
    let entry = |tag: u32| -> Option<(u32, usize)> {
        (0..count).find_map(|i| {
            let at = 8 + i * 16;
            (be32(blob, at)? == tag)
                .then(|| Some((be32(blob, at + 4)?, be32(blob, at + 8)? as usize)))?
        })
    };
    let string = |tag: u32| -> Option<String> {
        let (kind, offset) = entry(tag)?;
        if kind != STRING {
            return None;
        }
        let text = data.get(offset..)?;
        let end = text.iter().position(|b| *b == 0)?;
        Some(String::from_utf8_lossy(&text[..end]).into_owned())
    };
    let epoch = entry(EPOCH)
        .and_then(|(kind, offset)| (kind == INT32).then(|| be32(data, offset)).flatten());
    let name = string(NAME)?;
    let source = string(SOURCE_RPM)
        .and_then(|srpm| source_name(&srpm))
        .unwrap_or_else(|| name.clone());
    Some(Package {
        version: format!("{}-{}", string(VERSION)?, string(RELEASE)?),
        epoch,
        arch: string(ARCH).unwrap_or_default(),
        source,
        name,
    })
}

/// `bash` of `bash-5.1.8-9.el9.src.rpm`.
fn source_name(srpm: &str) -> Option<String> {
    let base = srpm
        .strip_suffix(".src.rpm")
        .or_else(|| srpm.strip_suffix(".nosrc.rpm"))?;
    let mut parts = base.rsplitn(3, '-');
    let (_release, _version, name) = (parts.next()?, parts.next()?, parts.next()?);
    Some(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header blob of `tags` (tag, type, value), as rpm stores one.
    fn blob(tags: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let mut index = Vec::new();
        let mut data = Vec::new();
        for (tag, kind, value) in tags {
            index.extend_from_slice(&tag.to_be_bytes());
            index.extend_from_slice(&kind.to_be_bytes());
            index.extend_from_slice(&(data.len() as u32).to_be_bytes());
            index.extend_from_slice(&1u32.to_be_bytes());
            data.extend_from_slice(value);
        }
        let mut out = (tags.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        out.extend(index);
        out.extend(data);
        out
    }

    #[test]
    fn a_header_names_its_package() {
        let header_blob = blob(&[
            (NAME, STRING, b"bash\0"),
            (VERSION, STRING, b"5.1.8\0"),
            (RELEASE, STRING, b"9.el9\0"),
            (EPOCH, INT32, &2u32.to_be_bytes()),
            (ARCH, STRING, b"x86_64\0"),
            (SOURCE_RPM, STRING, b"bash-5.1.8-9.el9.src.rpm\0"),
        ]);
        assert_eq!(
            header(&header_blob),
            Some(Package {
                name: "bash".into(),
                version: "5.1.8-9.el9".into(),
                epoch: Some(2),
                arch: "x86_64".into(),
                source: "bash".into(),
            })
        );
        let no_source = blob(&[
            (NAME, STRING, b"el-base\0"),
            (VERSION, STRING, b"1.0\0"),
            (RELEASE, STRING, b"1\0"),
            (ARCH, STRING, b"noarch\0"),
        ]);
        let package = header(&no_source).expect("a package");
        assert_eq!((package.epoch, package.source.as_str()), (None, "el-base"));
    }

    #[test]
    fn a_broken_header_is_none_not_a_panic() {
        assert_eq!(header(&[]), None);
        assert_eq!(header(&[0, 0, 0, 9, 0, 0, 0, 0]), None);
        assert_eq!(header(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]), None);
        let mut cut = blob(&[(NAME, STRING, b"bash\0")]);
        cut.truncate(cut.len() - 3);
        assert_eq!(header(&cut), None);
        assert_eq!(source_name("weird.src.rpm"), None);
    }
}
