//! rpm's database in the image, each package a header blob: `rpmdb.sqlite` (rpm 4.16 and later,
//! as Rocky 9 and Debian's rpm write it), or Berkeley DB's `Packages` (rpm 4.14: Rocky 8, read
//! by [`crate::rpmdb_bdb`]). The SQLite database and its write-ahead log are kept by the
//! snapshot; they are copied to a private folder and read with SQLite there.

use std::collections::BTreeMap;
use std::path::Path;

use crate::rpmdb_bdb;
use crate::snapshot::Snapshot;

/// Where rpm keeps its database (Rocky 9's, and the sysimage folder newer rpms use).
pub const DATABASES: [&str; 2] = ["/var/lib/rpm", "/usr/lib/sysimage/rpm"];
const SQLITE: &str = "rpmdb.sqlite";

/// `NAME`.
pub const NAME: u32 = 1000;
/// `VERSION`.
pub const VERSION: u32 = 1001;
/// `RELEASE`.
pub const RELEASE: u32 = 1002;
const DIRINDEXES: u32 = 1116;
const BASENAMES: u32 = 1117;
const DIRNAMES: u32 = 1118;
/// rpm's INT32 type.
pub const INT32: u32 = 4;
/// rpm's STRING type.
pub const STRING: u32 = 6;
const STRING_ARRAY: u32 = 8;

/// The header blobs of the image's rpm database: `None` when it has none; an error when it has
/// one that cannot be read.
pub fn header_blobs(snapshot: &Snapshot) -> Option<Result<Vec<Vec<u8>>, String>> {
    let Some(folder) = DATABASES
        .iter()
        .find(|dir| snapshot.read(&format!("{dir}/{SQLITE}")).is_some())
    else {
        return berkeley_db_blobs(snapshot);
    };
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let work = std::env::temp_dir().join(format!("imgbuild-rpmdb-{}-{n}", std::process::id()));
    let result = std::fs::create_dir_all(&work)
        .map_err(|e| e.to_string())
        .and_then(|()| copy_and_query(snapshot, folder, &work));
    let _ = std::fs::remove_dir_all(&work);
    Some(result)
}

/// The header blobs of a Berkeley DB `Packages`, if the image has one.
fn berkeley_db_blobs(snapshot: &Snapshot) -> Option<Result<Vec<Vec<u8>>, String>> {
    DATABASES.iter().find_map(|dir| {
        let path = format!("{dir}/{}", rpmdb_bdb::PACKAGES);
        let bytes = snapshot.read(&path)?;
        Some(rpmdb_bdb::header_blobs(bytes).map_err(|e| format!("{path}: {e}")))
    })
}

fn copy_and_query(snapshot: &Snapshot, folder: &str, work: &Path) -> Result<Vec<Vec<u8>>, String> {
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
    blobs
        .map(|b| b.map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()
}

/// A big-endian u32 of `bytes` at `at`.
fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(
        bytes.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// One header blob (index count, data length, the index, the data), read tag by tag; a tag
/// that is missing or malformed is `None`, never a panic.
pub struct Header<'a> {
    blob: &'a [u8],
    count: usize,
    data: &'a [u8],
}

impl<'a> Header<'a> {
    /// The header of `blob`, or `None` when it is not one.
    pub fn parse(blob: &'a [u8]) -> Option<Header<'a>> {
        let count = usize::try_from(be32(blob, 0)?).ok()?;
        let data_at = count.checked_mul(16)?.checked_add(8)?;
        let data = blob.get(data_at..)?;
        Some(Header { blob, count, data })
    }

    /// The (type, offset, count) of `tag`.
    fn entry(&self, tag: u32) -> Option<(u32, usize, usize)> {
        (0..self.count).find_map(|i| {
            let at = 8 + i * 16;
            (be32(self.blob, at)? == tag).then(|| {
                Some((
                    be32(self.blob, at + 4)?,
                    be32(self.blob, at + 8)? as usize,
                    be32(self.blob, at + 12)? as usize,
                ))
            })?
        })
    }

    /// The STRING `tag`.
    pub fn string(&self, tag: u32) -> Option<String> {
        let (kind, offset, _) = self.entry(tag)?;
        (kind == STRING).then_some(())?;
        self.strings_at(offset, 1)?.pop()
    }

    /// The first INT32 of `tag`.
    pub fn int32(&self, tag: u32) -> Option<u32> {
        let (kind, offset, _) = self.entry(tag)?;
        (kind == INT32).then(|| be32(self.data, offset))?
    }

    /// `count` NUL-ended strings from `offset`.
    fn strings_at(&self, mut offset: usize, count: usize) -> Option<Vec<String>> {
        let mut out = Vec::with_capacity(count.min(65_536));
        for _ in 0..count {
            let text = self.data.get(offset..)?;
            let end = text.iter().position(|b| *b == 0)?;
            out.push(String::from_utf8_lossy(&text[..end]).into_owned());
            offset = offset.checked_add(end + 1)?;
        }
        Some(out)
    }

    /// The files the package owns: `DIRNAMES[DIRINDEXES[i]] + BASENAMES[i]`.
    pub fn files(&self) -> Option<Vec<String>> {
        let Some((STRING_ARRAY, at, n)) = self.entry(BASENAMES) else {
            return Some(Vec::new());
        };
        let bases = self.strings_at(at, n)?;
        let (STRING_ARRAY, at, dirs) = self.entry(DIRNAMES)? else {
            return None;
        };
        let dirnames = self.strings_at(at, dirs)?;
        let (INT32, at, indexes) = self.entry(DIRINDEXES)? else {
            return None;
        };
        (indexes == n).then_some(())?;
        bases
            .into_iter()
            .enumerate()
            .map(|(i, base)| {
                let dir = dirnames.get(be32(self.data, at.checked_add(i * 4)?)? as usize)?;
                Some(format!("{dir}{base}"))
            })
            .collect()
    }
}

/// Who owns each file rpm installed: its path (as the package lists it) and `NAME-VERSION-
/// RELEASE`. `None` when the image has no rpm database.
pub fn owners(snapshot: &Snapshot) -> Option<Result<BTreeMap<String, String>, String>> {
    let blobs = match header_blobs(snapshot)? {
        Ok(blobs) => blobs,
        Err(e) => return Some(Err(e)),
    };
    let mut owners = BTreeMap::new();
    for blob in &blobs {
        let Some(header) = Header::parse(blob) else {
            continue;
        };
        let (Some(name), Some(version), Some(release)) = (
            header.string(NAME),
            header.string(VERSION),
            header.string(RELEASE),
        ) else {
            continue;
        };
        for file in header.files().unwrap_or_default() {
            owners.insert(file, format!("{name}-{version}-{release}"));
        }
    }
    Some(Ok(owners))
}

#[cfg(test)]
#[path = "rpmdb_tests.rs"]
mod tests;
