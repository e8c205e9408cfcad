//! The image's time zone (`/etc/localtime`, a TZif file): the UTC offset of a local time, as
//! the C library's `mktime` finds it on the image. No file: UTC.

use std::path::Path;

use super::api::ModuleError;
use crate::rootfs::RootFs;

/// Transitions (UTC seconds, index of their type) and the types' UTC offsets.
#[derive(Debug, Default, PartialEq, Eq)]
struct Zone {
    transitions: Vec<(i64, usize)>,
    offsets: Vec<i64>,
}

impl Zone {
    /// The offset in force at UTC time `t`.
    fn offset_at(&self, t: i64) -> i64 {
        let index = self
            .transitions
            .iter()
            .take_while(|(at, _)| *at <= t)
            .last()
            .map_or(0, |(_, i)| *i);
        self.offsets.get(index).copied().unwrap_or(0)
    }
}

fn be_i32(bytes: &[u8], at: usize) -> Option<i64> {
    let word: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    Some(i64::from(i32::from_be_bytes(word)))
}

/// The version 1 data of a TZif file (it covers 1901 to 2038).
fn parse(bytes: &[u8]) -> Option<Zone> {
    if bytes.get(..4)? != b"TZif" {
        return None;
    }
    let count = |n: usize| be_i32(bytes, 20 + 4 * n).and_then(|c| usize::try_from(c).ok());
    let (timecnt, typecnt) = (count(3)?, count(4)?);
    let times = 44;
    let indices = times + 4 * timecnt;
    let types = indices + timecnt;
    let transitions = (0..timecnt)
        .map(|i| {
            Some((
                be_i32(bytes, times + 4 * i)?,
                usize::from(*bytes.get(indices + i)?),
            ))
        })
        .collect::<Option<Vec<_>>>()?;
    let offsets = (0..typecnt)
        .map(|i| be_i32(bytes, types + 6 * i))
        .collect::<Option<Vec<_>>>()?;
    Some(Zone {
        transitions,
        offsets,
    })
}

/// The UTC offset (seconds east) of `local` seconds of the image's local time.
pub fn offset_of_local(fs: &RootFs, local: i64) -> Result<i64, ModuleError> {
    let path = Path::new("/etc/localtime");
    if fs.meta_follow(path)?.is_none() {
        return Ok(0);
    }
    let data = fs.read(path)?;
    let zone = parse(&data)
        .ok_or_else(|| ModuleError::new("/etc/localtime of the image is not a TZif file"))?;
    Ok(local_offset(&zone, local))
}

/// The offset that makes `local` a UTC time: found from the offset at `local` read as UTC,
/// then again from the time that gives.
fn local_offset(zone: &Zone, local: i64) -> i64 {
    let first = zone.offset_at(local);
    zone.offset_at(local - first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tzif(transitions: &[(i32, u8)], offsets: &[i32]) -> Vec<u8> {
        let mut b = b"TZif2".to_vec();
        b.resize(20, 0);
        for n in [0, 0, 0, transitions.len(), offsets.len(), 0] {
            b.extend((n as i32).to_be_bytes());
        }
        for (t, _) in transitions {
            b.extend(t.to_be_bytes());
        }
        b.extend(transitions.iter().map(|(_, i)| *i));
        for o in offsets {
            b.extend(o.to_be_bytes());
            b.extend([0, 0]);
        }
        b
    }

    #[test]
    fn offsets_follow_the_transitions() {
        let zone = parse(&tzif(&[(1000, 1)], &[0, 3600])).expect("zone");
        assert_eq!(zone.offset_at(999), 0);
        assert_eq!(zone.offset_at(1000), 3600);
        assert_eq!(local_offset(&zone, 10_000), 3600);
        assert_eq!(parse(b"nope"), None);
        let utc = parse(&tzif(&[], &[0])).expect("utc");
        assert_eq!(local_offset(&utc, 1_644_329_640), 0);
    }
}
