//! rpm's packages in the image: the header blobs of its database (read by `verify::rpmdb`:
//! `rpmdb.sqlite` of rpm 4.16 and later, as Rocky 9 and Debian's rpm write it, or Rocky 8's
//! Berkeley DB `Packages`), each parsed for the tags an SBOM names.

use verify::rpmdb::{self, NAME, RELEASE, VERSION};
use verify::Snapshot;

const EPOCH: u32 = 1003;
const ARCH: u32 = 1022;
const SOURCE_RPM: u32 = 1044;

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
    Some(rpmdb::header_blobs(snapshot)?.map(|blobs| {
        let mut packages: Vec<Package> = blobs
            .iter()
            .filter_map(|blob| header(blob))
            .filter(|p| p.name != "gpg-pubkey")
            .collect();
        packages.sort();
        packages
    }))
}

/// The package a header blob describes, or `None` when it is not one.
pub fn header(blob: &[u8]) -> Option<Package> {
    let header = rpmdb::Header::parse(blob)?;
    let name = header.string(NAME)?;
    let source = header
        .string(SOURCE_RPM)
        .and_then(|srpm| source_name(&srpm))
        .unwrap_or_else(|| name.clone());
    Some(Package {
        version: format!("{}-{}", header.string(VERSION)?, header.string(RELEASE)?),
        epoch: header.int32(EPOCH),
        arch: header.string(ARCH).unwrap_or_default(),
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
    use verify::rpmdb::{INT32, STRING};

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
