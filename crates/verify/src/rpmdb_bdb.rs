//! rpm's Berkeley DB database (`/var/lib/rpm/Packages`, rpm 4.14 and older: Rocky and RHEL 8),
//! read without libdb. `Packages` is a Berkeley DB hash database whose keys are the header
//! instance numbers and whose values are the header blobs; a blob bigger than a quarter page
//! lives on a chain of overflow pages. Only what rpm writes is read: hash and overflow pages, no
//! duplicates, no checksums or encryption (each refused by name).

use std::collections::BTreeMap;

/// The file's name in rpm's database folder.
pub const PACKAGES: &str = "Packages";

/// Berkeley DB's hash magic number, in the byte order the file was written in.
const HASH_MAGIC: u32 = 0x0006_1561;
/// The page header's size (`SIZEOF_PAGE`): the item index of a page follows it.
const PAGE_HEADER: usize = 26;
/// Page types (`db_page.h`).
const P_OVERFLOW: u8 = 7;
const P_HASHMETA: u8 = 8;
const P_HASH_UNSORTED: u8 = 2;
const P_HASH: u8 = 13;
/// Hash item types.
const H_KEYDATA: u8 = 1;
const H_OFFPAGE: u8 = 3;

/// A Berkeley DB file of a byte order.
struct Db<'a> {
    bytes: &'a [u8],
    big_endian: bool,
    page_size: usize,
}

impl<'a> Db<'a> {
    /// The database's metadata: its byte order and page size, checked.
    fn open(bytes: &'a [u8]) -> Result<Db<'a>, String> {
        let magic = bytes
            .get(12..16)
            .ok_or("shorter than a Berkeley DB metadata page")?;
        let magic = [magic[0], magic[1], magic[2], magic[3]];
        let big_endian = match (u32::from_le_bytes(magic), u32::from_be_bytes(magic)) {
            (HASH_MAGIC, _) => false,
            (_, HASH_MAGIC) => true,
            _ => return Err("not a Berkeley DB hash database (its magic number)".into()),
        };
        let mut db = Db {
            bytes,
            big_endian,
            page_size: 0,
        };
        db.page_size = db.u32_at(20)? as usize;
        if !(512..=65_536).contains(&db.page_size) || !db.page_size.is_power_of_two() {
            return Err(format!("page size {} is not Berkeley DB's", db.page_size));
        }
        if db.byte(25)? != P_HASHMETA {
            return Err("its first page is not a hash metadata page".into());
        }
        if db.byte(24)? != 0 || db.byte(26)? & 1 != 0 {
            return Err("it is encrypted or checksummed, which rpm never does".into());
        }
        Ok(db)
    }

    fn byte(&self, at: usize) -> Result<u8, String> {
        self.bytes.get(at).copied().ok_or_else(|| truncated(at))
    }

    fn u16_at(&self, at: usize) -> Result<u16, String> {
        let b = self.bytes.get(at..at + 2).ok_or_else(|| truncated(at))?;
        let b = [b[0], b[1]];
        Ok(match self.big_endian {
            true => u16::from_be_bytes(b),
            false => u16::from_le_bytes(b),
        })
    }

    fn u32_at(&self, at: usize) -> Result<u32, String> {
        let b = self.bytes.get(at..at + 4).ok_or_else(|| truncated(at))?;
        let b = [b[0], b[1], b[2], b[3]];
        Ok(match self.big_endian {
            true => u32::from_be_bytes(b),
            false => u32::from_le_bytes(b),
        })
    }

    /// How many pages the file holds (whole pages only).
    fn pages(&self) -> usize {
        self.bytes.len() / self.page_size
    }

    /// Page `pgno`'s bytes.
    fn page(&self, pgno: usize) -> Result<&'a [u8], String> {
        let start = pgno
            .checked_mul(self.page_size)
            .ok_or_else(|| format!("page {pgno} is out of range"))?;
        self.bytes
            .get(start..start + self.page_size)
            .ok_or_else(|| format!("page {pgno} is past the file's end"))
    }

    /// The items (keys and data, alternating) of the hash page `pgno`: where each starts in
    /// the file and where it ends. Items fill the page from its end down.
    fn hash_items(&self, pgno: usize) -> Result<Vec<(usize, usize)>, String> {
        let base = pgno * self.page_size;
        let entries = usize::from(self.u16_at(base + 20)?);
        let index_end = PAGE_HEADER + 2 * entries;
        let mut items = Vec::with_capacity(entries);
        let mut end = self.page_size;
        for i in 0..entries {
            let start = usize::from(self.u16_at(base + PAGE_HEADER + 2 * i)?);
            if start < index_end || start >= end {
                return Err(format!("page {pgno}: item {i} lies outside the page"));
            }
            items.push((base + start, base + end));
            end = start;
        }
        Ok(items)
    }

    /// The bytes of the item at `start..end`: inline, or gathered from its chain of overflow
    /// pages.
    fn item_bytes(&self, (start, end): (usize, usize)) -> Result<Vec<u8>, String> {
        match self.byte(start)? {
            H_KEYDATA => Ok(self.bytes[start + 1..end].to_vec()),
            H_OFFPAGE => self.overflow(
                self.u32_at(start + 4)? as usize,
                self.u32_at(start + 8)? as usize,
            ),
            other => Err(format!(
                "an item of type {other} (duplicates), which rpm's Packages never holds"
            )),
        }
    }

    /// `length` bytes from the overflow chain that starts at page `pgno`.
    fn overflow(&self, mut pgno: usize, length: usize) -> Result<Vec<u8>, String> {
        let mut out = Vec::with_capacity(length.min(self.bytes.len()));
        let mut hops = 0;
        while out.len() < length {
            hops += 1;
            if pgno == 0 || hops > self.pages() {
                return Err(format!("an overflow chain ends before its {length} bytes"));
            }
            let base = pgno * self.page_size;
            if self.page(pgno)?[25] != P_OVERFLOW {
                return Err(format!("page {pgno} should be an overflow page"));
            }
            let on_page = usize::from(self.u16_at(base + 22)?);
            let data = self
                .bytes
                .get(base + PAGE_HEADER..base + PAGE_HEADER + on_page)
                .ok_or_else(|| format!("overflow page {pgno} says it holds more than a page"))?;
            out.extend_from_slice(data);
            pgno = self.u32_at(base + 16)? as usize;
        }
        out.truncate(length);
        Ok(out)
    }
}

fn truncated(at: usize) -> String {
    format!("the file ends at byte {at}, inside a page")
}

/// Every key and value of the Berkeley DB hash database `db`, by key.
fn hash_records(db: &Db) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, String> {
    let mut records = BTreeMap::new();
    for pgno in 1..db.pages() {
        let kind = db.page(pgno)?[25];
        if kind != P_HASH && kind != P_HASH_UNSORTED {
            continue;
        }
        let items = db.hash_items(pgno)?;
        for pair in items.chunks(2) {
            let [key, data] = pair else {
                return Err(format!("page {pgno}: a key without its data"));
            };
            records.insert(db.item_bytes(*key)?, db.item_bytes(*data)?);
        }
    }
    Ok(records)
}

/// The header blobs of rpm's `Packages`, in the order of their instance numbers (rpm's own
/// record 0, the next instance number, left out).
pub fn header_blobs(bytes: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let db = Db::open(bytes)?;
    let mut blobs: Vec<(u32, Vec<u8>)> = Vec::new();
    for (key, data) in hash_records(&db)? {
        let Ok(key) = <[u8; 4]>::try_from(key.as_slice()) else {
            return Err(format!("a key of {} bytes, not a header number", key.len()));
        };
        let instance = match db.big_endian {
            true => u32::from_be_bytes(key),
            false => u32::from_le_bytes(key),
        };
        if instance != 0 {
            blobs.push((instance, data));
        }
    }
    blobs.sort_by_key(|(instance, _)| *instance);
    Ok(blobs.into_iter().map(|(_, blob)| blob).collect())
}

#[cfg(test)]
#[path = "rpmdb_bdb_tests.rs"]
mod tests;
