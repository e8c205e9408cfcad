//! Container images: an OCI layout folder, or an `oci-archive` / `docker-archive` tar read in
//! place (its members found by offset, then each layer streamed from the file).

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value as Json;

use super::{layers, Labels};
use crate::snapshot::Snapshot;

fn fail(message: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message.into())
}

fn json(bytes: &[u8], what: &str) -> std::io::Result<Json> {
    serde_json::from_slice(bytes).map_err(|e| fail(format!("{what}: not JSON: {e}")))
}

pub(super) fn labels_of(config: &Json) -> Labels {
    config["config"]["Labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// The layout member of a blob, its digest checked first (no `..` or `/` gets through).
fn blob_path(digest: &str) -> std::io::Result<String> {
    oci_layout::Digest::parse(digest)
        .map(|d| d.layout_member())
        .map_err(|e| fail(e.to_string()))
}

/// Where an image's parts are: a folder, or members of a tar.
trait Store {
    fn open(&self, member: &str) -> std::io::Result<Box<dyn Read + '_>>;

    fn read_all(&self, member: &str) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.open(member)?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    fn has(&self, member: &str) -> bool;
}

struct Folder<'a>(&'a Path);

impl Store for Folder<'_> {
    fn open(&self, member: &str) -> std::io::Result<Box<dyn Read + '_>> {
        Ok(Box::new(std::fs::File::open(self.0.join(member))?))
    }

    fn has(&self, member: &str) -> bool {
        self.0.join(member).is_file()
    }
}

/// A tar file's members by name: offset and size of their data.
struct TarFile {
    path: std::path::PathBuf,
    members: BTreeMap<String, (u64, u64)>,
}

impl TarFile {
    fn index(path: &Path) -> std::io::Result<TarFile> {
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

impl Store for TarFile {
    fn open(&self, member: &str) -> std::io::Result<Box<dyn Read + '_>> {
        let (offset, size) = self
            .members
            .get(member)
            .ok_or_else(|| fail(format!("the archive has no {member}")))?;
        let mut file = std::fs::File::open(&self.path)?;
        file.seek(SeekFrom::Start(*offset))?;
        Ok(Box::new(std::io::BufReader::with_capacity(
            1 << 20,
            file.take(*size),
        )))
    }

    fn has(&self, member: &str) -> bool {
        self.members.contains_key(member)
    }
}

/// An OCI image (layout folder or oci-archive): index → manifest → config and layers.
fn read_oci(store: &dyn Store) -> std::io::Result<(Snapshot, Labels)> {
    let index = json(&store.read_all("index.json")?, "index.json")?;
    let mut manifest_digest = index["manifests"][0]["digest"]
        .as_str()
        .ok_or_else(|| fail("index.json names no manifest"))?
        .to_owned();
    let mut manifest = json(
        &store.read_all(&blob_path(&manifest_digest)?)?,
        "the manifest",
    )?;
    // An index of platforms: take its first manifest.
    if manifest["manifests"].is_array() {
        manifest_digest = manifest["manifests"][0]["digest"]
            .as_str()
            .ok_or_else(|| fail("the image index names no manifest"))?
            .to_owned();
        manifest = json(
            &store.read_all(&blob_path(&manifest_digest)?)?,
            "the manifest",
        )?;
    }
    let config_digest = manifest["config"]["digest"]
        .as_str()
        .ok_or_else(|| fail("the manifest names no config"))?;
    let config = json(&store.read_all(&blob_path(config_digest)?)?, "the config")?;
    let mut snapshot = Snapshot::default();
    for layer in manifest["layers"].as_array().cloned().unwrap_or_default() {
        let digest = layer["digest"]
            .as_str()
            .ok_or_else(|| fail("a layer without a digest"))?;
        layers::apply(&mut snapshot, store.open(&blob_path(digest)?)?)
            .map_err(|e| fail(format!("layer {digest}: {e}")))?;
    }
    Ok((snapshot, labels_of(&config)))
}

/// A docker-archive (`docker save`, skopeo's `docker-archive:`): manifest.json names the config
/// and the layer members.
fn read_docker(store: &dyn Store) -> std::io::Result<(Snapshot, Labels)> {
    let manifest = json(&store.read_all("manifest.json")?, "manifest.json")?;
    let image = &manifest[0];
    let config_member = image["Config"]
        .as_str()
        .ok_or_else(|| fail("manifest.json names no Config"))?;
    let config = json(&store.read_all(config_member)?, "the config")?;
    let mut snapshot = Snapshot::default();
    for layer in image["Layers"].as_array().cloned().unwrap_or_default() {
        let member = layer
            .as_str()
            .ok_or_else(|| fail("manifest.json lists a layer that is no path"))?;
        layers::apply(&mut snapshot, store.open(member)?)
            .map_err(|e| fail(format!("layer {member}: {e}")))?;
    }
    Ok((snapshot, labels_of(&config)))
}

/// An OCI layout folder.
pub fn read_layout(path: &Path) -> std::io::Result<(Snapshot, Labels)> {
    read_oci(&Folder(path))
}

/// An oci-archive or docker-archive tar.
pub fn read_tar(path: &Path) -> std::io::Result<(Snapshot, Labels)> {
    let tar = TarFile::index(path)?;
    if tar.has("manifest.json") {
        read_docker(&tar)
    } else if tar.has("index.json") {
        read_oci(&tar)
    } else {
        Err(fail(
            "a tar with neither manifest.json (docker-archive) nor index.json (oci-archive)",
        ))
    }
}
