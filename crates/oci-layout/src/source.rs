//! Where an image's parts are: an OCI layout folder, or the members of a tar (an
//! `oci-archive` or a `docker-archive`) found by offset and read in place.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// An invalid-data error saying `message`.
pub(crate) fn fail(message: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message.into())
}

/// An image's parts, by member name (`index.json`, `blobs/sha256/<hex>`, `manifest.json`).
pub enum Source {
    /// A folder: each member is a file under it.
    Folder(PathBuf),
    /// A tar file: each member is found by its offset and read in place.
    Tar(TarFile),
}

/// A tar file's members by name: offset and size of their data.
pub struct TarFile {
    path: PathBuf,
    members: BTreeMap<String, (u64, u64)>,
}

impl TarFile {
    /// Reads the member list of the tar at `path` (nothing is unpacked).
    pub fn index(path: &Path) -> std::io::Result<TarFile> {
        let mut archive = tar::Archive::new(std::fs::File::open(path)?);
        let mut members = BTreeMap::new();
        for entry in archive.entries()? {
            let entry = entry?;
            let name = entry.path()?.to_string_lossy().into_owned();
            let name = name.trim_start_matches("./").to_owned();
            members.insert(name, (entry.raw_file_position(), entry.size()));
        }
        Ok(TarFile {
            path: path.to_owned(),
            members,
        })
    }
}

impl Source {
    /// The folder at `path`.
    pub fn folder(path: &Path) -> Source {
        Source::Folder(path.to_owned())
    }

    /// The tar at `path`, its members listed.
    pub fn tar(path: &Path) -> std::io::Result<Source> {
        Ok(Source::Tar(TarFile::index(path)?))
    }

    /// A reader of `member`.
    pub fn open(&self, member: &str) -> std::io::Result<Box<dyn Read + '_>> {
        match self {
            Source::Folder(dir) => {
                // Named, as a tar's missing member is: a bare "No such file" says not which.
                let file = std::fs::File::open(dir.join(member))
                    .map_err(|e| std::io::Error::new(e.kind(), format!("{member}: {e}")))?;
                Ok(Box::new(file))
            }
            Source::Tar(tar) => {
                let (offset, size) = tar
                    .members
                    .get(member)
                    .ok_or_else(|| fail(format!("the archive has no {member}")))?;
                let mut file = std::fs::File::open(&tar.path)?;
                file.seek(SeekFrom::Start(*offset))?;
                Ok(Box::new(std::io::BufReader::with_capacity(
                    1 << 20,
                    file.take(*size),
                )))
            }
        }
    }

    /// All of `member`.
    pub fn read_all(&self, member: &str) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.open(member)?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Whether `member` is there.
    pub fn has(&self, member: &str) -> bool {
        match self {
            Source::Folder(dir) => dir.join(member).is_file(),
            Source::Tar(tar) => tar.members.contains_key(member),
        }
    }
}
