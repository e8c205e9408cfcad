//! OCI image config, manifest and index, built with `oci-spec`'s types and written as canonical
//! JSON (the spec's field order, sorted labels and annotations, no whitespace, `created` from
//! the epoch), and the OCI image layout (the docker-archive is `docker_archive`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use oci_spec::image::{
    Arch, ConfigBuilder, Descriptor, HistoryBuilder, ImageConfiguration, ImageConfigurationBuilder,
    ImageIndexBuilder, ImageManifestBuilder, MediaType, Os, RootFsBuilder,
};
use serde::Serialize;

use crate::blobs::{BlobStore, LayerBlob};

/// Media types.
pub const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// OCI config media type.
pub const CONFIG: &str = "application/vnd.oci.image.config.v1+json";
/// Index media type.
pub const INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// What an image is made of.
#[derive(Debug, Clone)]
pub struct ImageSpec {
    /// Layers, bottom first, with the step that made each.
    pub layers: Vec<(LayerBlob, String)>,
    /// Labels (`org.opencontainers.image.*`, `io.imgbuild.*`).
    pub labels: BTreeMap<String, String>,
    /// Seconds since 1970 for every timestamp.
    pub epoch: u64,
}

/// `YYYY-MM-DDTHH:MM:SSZ` for seconds since 1970.
pub fn rfc3339(epoch: u64) -> String {
    let t = engine::utc::Utc::from_epoch(epoch);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

/// The config and manifest of an image, stored in `blobs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Config digest.
    pub config: String,
    /// Config bytes.
    pub config_bytes: Vec<u8>,
    /// Manifest digest.
    pub manifest: String,
    /// Manifest bytes.
    pub manifest_bytes: Vec<u8>,
}

pub(crate) fn json(value: &impl Serialize) -> std::io::Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(std::io::Error::other)
}

fn spec_error(e: oci_spec::OciSpecError) -> std::io::Error {
    std::io::Error::other(e)
}

fn digest(text: &str) -> std::io::Result<oci_spec::image::Digest> {
    text.parse().map_err(spec_error)
}

/// A descriptor of `size` bytes of `media_type` at `digest`.
fn descriptor(media_type: MediaType, text: &str, size: u64) -> std::io::Result<Descriptor> {
    Ok(Descriptor::new(media_type, size, digest(text)?))
}

/// An OCI document as canonical JSON: the fields in the order the spec types declare them, no
/// whitespace, and the maps those types keep unordered (labels, annotations) sorted by key, so
/// that the same image is the same bytes.
fn canonical(document: &impl Serialize) -> std::io::Result<Vec<u8>> {
    fn sort_unordered(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, child) in map.iter_mut() {
                    if let ("Labels" | "annotations", serde_json::Value::Object(inner)) =
                        (key.as_str(), &mut *child)
                    {
                        inner.sort_keys();
                    }
                    sort_unordered(child);
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(sort_unordered),
            _ => {}
        }
    }
    let mut value = serde_json::to_value(document).map_err(std::io::Error::other)?;
    sort_unordered(&mut value);
    json(&value)
}

/// The image config of `spec`: amd64 Linux, `/bin/sh`, its labels, its layers' diff_ids and
/// history, every time the epoch's.
fn image_config(spec: &ImageSpec) -> std::io::Result<ImageConfiguration> {
    let created = rfc3339(spec.epoch);
    let run = ConfigBuilder::default()
        .env(vec![
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned(),
        ])
        .cmd(vec!["/bin/sh".to_owned()])
        .labels(spec.labels.clone().into_iter().collect::<HashMap<_, _>>())
        .build()
        .map_err(spec_error)?;
    let rootfs = RootFsBuilder::default()
        .typ("layers")
        .diff_ids(
            spec.layers
                .iter()
                .map(|(l, _)| l.diff_id.clone())
                .collect::<Vec<_>>(),
        )
        .build()
        .map_err(spec_error)?;
    let history = spec
        .layers
        .iter()
        .map(|(_, by)| {
            HistoryBuilder::default()
                .created(created.clone())
                .created_by(by.clone())
                .build()
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(spec_error)?;
    ImageConfigurationBuilder::default()
        .created(created)
        .architecture(Arch::Amd64)
        .os(Os::Linux)
        .config(run)
        .rootfs(rootfs)
        .history(history)
        .build()
        .map_err(spec_error)
}

/// Writes the config and manifest of `spec` into `blobs`.
pub fn write_image(blobs: &BlobStore, spec: &ImageSpec) -> std::io::Result<Written> {
    let config_bytes = canonical(&image_config(spec)?)?;
    let config_digest = blobs.write_bytes(&config_bytes)?;
    let layers = spec
        .layers
        .iter()
        .map(|(l, _)| {
            descriptor(
                MediaType::from(l.compression.media_type()),
                &l.digest,
                l.size,
            )
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    let manifest = ImageManifestBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageManifest)
        .config(descriptor(
            MediaType::ImageConfig,
            &config_digest,
            config_bytes.len() as u64,
        )?)
        .layers(layers)
        .build()
        .map_err(spec_error)?;
    let manifest_bytes = canonical(&manifest)?;
    let manifest_digest = blobs.write_bytes(&manifest_bytes)?;
    Ok(Written {
        config: config_digest,
        config_bytes,
        manifest: manifest_digest,
        manifest_bytes,
    })
}

/// Puts `tmp` where `dest` is, atomically replacing an older output.
pub fn replace(tmp: &Path, dest: &Path) -> std::io::Result<()> {
    if dest.is_dir() && !dest.is_symlink() {
        let old = dest.with_extension(format!("old-{}", std::process::id()));
        std::fs::rename(dest, &old)?;
        std::fs::rename(tmp, dest)?;
        let _ = std::fs::remove_dir_all(&old);
        Ok(())
    } else {
        std::fs::rename(tmp, dest)
    }
}

fn link_or_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to)?;
    }
    Ok(())
}

/// Writes an OCI image layout at `dest` (through a temporary folder and a rename), tagged `tag`.
pub fn write_oci_layout(
    dest: &Path,
    blobs: &BlobStore,
    spec: &ImageSpec,
    written: &Written,
    tag: &str,
) -> std::io::Result<()> {
    let parent = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let tmp = tempfile::Builder::new()
        .prefix(".oci-")
        .tempdir_in(parent)?;
    let root = tmp.path();
    std::fs::create_dir_all(root.join("blobs/sha256"))?;
    std::fs::write(
        root.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )?;
    let mut digests: Vec<&str> = spec.layers.iter().map(|(l, _)| l.digest.as_str()).collect();
    digests.push(&written.config);
    digests.push(&written.manifest);
    for digest in digests {
        // Checked before it names the store's file and the layout's.
        let digest = oci_layout::Digest::parse(digest)
            .and_then(oci_layout::Digest::sha256)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let target = digest.blob_path(&root.join("blobs"));
        if !target.exists() {
            link_or_copy(&blobs.digest_path(&digest), &target)?;
        }
    }
    let mut manifest = descriptor(
        MediaType::ImageManifest,
        &written.manifest,
        written.manifest_bytes.len() as u64,
    )?;
    manifest.set_annotations(Some(HashMap::from([(
        "org.opencontainers.image.ref.name".to_owned(),
        tag.to_owned(),
    )])));
    let index = ImageIndexBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageIndex)
        .manifests(vec![manifest])
        .build()
        .map_err(spec_error)?;
    std::fs::write(root.join("index.json"), canonical(&index)?)?;
    std::fs::set_permissions(root, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let kept = tmp.keep();
    replace(&kept, dest)
}

/// The path a docker-archive output may have: Warewulf reads it as `file://` and refuses `:`.
pub fn archive_path_ok(path: &Path) -> bool {
    !path.to_string_lossy().contains(':')
}

/// Where the outputs of an image go below `out`.
pub fn output_paths(out: &Path, image: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = out.join(image);
    (
        dir.join("oci"),
        dir.join(format!("{image}.tar")),
        dir.join("rootfs"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of a config, manifest and index, fixed: the same image must keep its digest
    /// from one imgbuild to the next (these are the bytes imgbuild wrote before its OCI
    /// documents were built with oci-spec).
    #[test]
    fn documents_keep_their_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blobs = BlobStore::new(dir.path()).expect("blobs");
        let layer = |n: u8, compression| LayerBlob {
            digest: format!("sha256:{}", format!("{n:02x}").repeat(32)),
            size: 1000 + u64::from(n),
            diff_id: format!("sha256:{}", format!("{:02x}", n + 0x10).repeat(32)),
            diff_size: 5000,
            compression,
        };
        let mut labels = BTreeMap::new();
        for (k, v) in [
            ("org.opencontainers.image.title", "test"),
            ("io.imgbuild.kernel", "6.1.0-50-amd64"),
            ("io.imgbuild.recipe-digest", "sha256:abc"),
            ("a", "first"),
        ] {
            labels.insert(k.to_owned(), v.to_owned());
        }
        let spec = ImageSpec {
            layers: vec![
                (
                    layer(1, crate::compression::Compression::Gzip),
                    "debootstrap".into(),
                ),
                (
                    layer(2, crate::compression::Compression::Zstd),
                    "imgbuild role x".into(),
                ),
            ],
            labels,
            epoch: 1_700_000_000,
        };
        let written = write_image(&blobs, &spec).expect("written");
        let config = String::from_utf8(written.config_bytes.clone()).expect("utf-8");
        assert!(
            config.starts_with(r#"{"created":"2023-11-14T22:13:20Z","architecture":"amd64","os":"linux","config":{"Env":["PATH="#),
            "{config}"
        );
        assert_eq!(
            written.config,
            "sha256:84b1ead03dbc29e43a963e24e4f83b7553be01979ec5a74d12ea23abffa219fb",
            "{config}"
        );
        assert_eq!(
            written.manifest,
            "sha256:21d64718122e33c0e6ff4695ad281306a47dcaf7ee79824069822bbd2115b985",
            "{}",
            String::from_utf8_lossy(&written.manifest_bytes)
        );
        let layout = dir.path().join("layout");
        write_oci_layout(&layout, &blobs, &spec, &written, "test").expect_err("no layer blobs");
        for (l, _) in &spec.layers {
            std::fs::write(blobs.path(&l.digest).expect("digest"), b"x").expect("blob");
        }
        write_oci_layout(&layout, &blobs, &spec, &written, "test").expect("layout");
        let index = std::fs::read(layout.join("index.json")).expect("index");
        assert_eq!(
            crate::hashing::digest_of(&index),
            "sha256:6a0e04cdb5004f86c1269284b68a3475de7b4c5e274e164ba11f9cde91643492",
            "{}",
            String::from_utf8_lossy(&index)
        );
    }

    #[test]
    fn rfc3339_from_epoch() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
