//! Reading an image from its [`Source`] into its config and its layers, bottom first: an OCI
//! image (index → manifest, the first of an index of platforms → config and layers) or a
//! docker-archive (`manifest.json` names the config and the layer members). The index and the
//! manifest are read as oci-spec's typed documents (the types the image crate writes them with),
//! each descriptor's digest checked before it names a blob.

use oci_spec::image::{Descriptor, ImageIndex, ImageManifest};
use serde::Deserialize;
use serde_json::Value as Json;

use crate::digest::Digest;
use crate::source::{fail, Source};

/// An image read from its source: the config, and where each layer is.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    /// The image config (`config.Labels`, ...).
    pub config: Json,
    /// The layers, bottom first.
    pub layers: Vec<Layer>,
}

/// One layer of an [`Image`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// Its member in the source (`blobs/sha256/<hex>`, or a docker-archive's path).
    pub member: String,
    /// How it is named in messages: its digest (OCI), or its member (docker-archive).
    pub name: String,
    /// Its media type, when the manifest gives one (OCI).
    pub media_type: Option<String>,
    /// Its size in bytes, when the manifest gives one (OCI).
    pub size: Option<u64>,
    /// The digest of its uncompressed tar, as the config's `rootfs.diff_ids` lists it.
    pub diff_id: Option<String>,
}

/// One image of a docker-archive's `manifest.json`, as `docker save` writes it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ArchivedImage {
    config: String,
    #[serde(default)]
    layers: Vec<String>,
}

/// Whether a document lists manifests (an index of platforms) rather than layers.
#[derive(Debug, Deserialize)]
struct Listing {
    manifests: Option<serde::de::IgnoredAny>,
}

/// The config's `rootfs.diff_ids[index]`.
fn diff_id(config: &Json, index: usize) -> Option<String> {
    config["rootfs"]["diff_ids"][index]
        .as_str()
        .map(str::to_owned)
}

fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> std::io::Result<T> {
    serde_json::from_slice(bytes).map_err(|e| fail(format!("{what}: {e}")))
}

/// The digest a descriptor names, checked (no `..` or `/` gets through).
fn digest_of(descriptor: &Descriptor) -> std::io::Result<Digest> {
    Digest::parse(descriptor.digest().as_ref()).map_err(|e| fail(e.to_string()))
}

/// The first manifest an index names.
fn first_manifest<'a>(index: &'a ImageIndex, what: &str) -> std::io::Result<&'a Descriptor> {
    index
        .manifests()
        .first()
        .ok_or_else(|| fail(format!("{what} names no manifest")))
}

impl Source {
    /// Reads the image: a folder as an OCI layout; a tar as a docker-archive when it holds
    /// `manifest.json`, as an oci-archive when it holds `index.json`.
    pub fn image(&self) -> std::io::Result<Image> {
        match self {
            Source::Folder(_) => self.oci_image(),
            Source::Tar(_) if self.has("manifest.json") => self.docker_image(),
            Source::Tar(_) if self.has("index.json") => self.oci_image(),
            Source::Tar(_) => Err(fail(
                "a tar with neither manifest.json (docker-archive) nor index.json (oci-archive)",
            )),
        }
    }

    /// The blob `descriptor` names.
    fn blob(&self, descriptor: &Descriptor) -> std::io::Result<Vec<u8>> {
        self.read_all(&digest_of(descriptor)?.layout_member())
    }

    /// The image manifest the layout's index leads to, through an index of platforms (its first
    /// manifest) where there is one.
    fn manifest(&self) -> std::io::Result<ImageManifest> {
        let index: ImageIndex = parse(&self.read_all("index.json")?, "index.json")?;
        let bytes = self.blob(first_manifest(&index, "index.json")?)?;
        let listing: Listing = parse(&bytes, "the manifest")?;
        if listing.manifests.is_none() {
            return parse(&bytes, "the manifest");
        }
        let platforms: ImageIndex = parse(&bytes, "the image index")?;
        let bytes = self.blob(first_manifest(&platforms, "the image index")?)?;
        parse(&bytes, "the manifest")
    }

    /// An OCI image (layout folder or oci-archive): index → manifest → config and layers.
    pub fn oci_image(&self) -> std::io::Result<Image> {
        let manifest = self.manifest()?;
        let config: Json = parse(&self.blob(manifest.config())?, "the config")?;
        let mut layers = Vec::new();
        for (index, layer) in manifest.layers().iter().enumerate() {
            let digest = digest_of(layer)?;
            layers.push(Layer {
                member: digest.layout_member(),
                name: digest.to_string(),
                media_type: Some(layer.media_type().to_string()),
                size: Some(layer.size()),
                diff_id: diff_id(&config, index),
            });
        }
        Ok(Image { config, layers })
    }

    /// A docker-archive (`docker save`, skopeo's `docker-archive:`): manifest.json names the
    /// config and the layer members.
    pub fn docker_image(&self) -> std::io::Result<Image> {
        let images: Vec<ArchivedImage> = parse(&self.read_all("manifest.json")?, "manifest.json")?;
        let image = images
            .first()
            .ok_or_else(|| fail("manifest.json names no image"))?;
        let config: Json = parse(&self.read_all(&image.config)?, "the config")?;
        let layers = image
            .layers
            .iter()
            .enumerate()
            .map(|(index, member)| Layer {
                member: member.clone(),
                name: member.clone(),
                media_type: None,
                size: None,
                diff_id: diff_id(&config, index),
            })
            .collect();
        Ok(Image { config, layers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest_of(name: char) -> String {
        format!("sha256:{}", name.to_string().repeat(64))
    }

    /// A layout folder whose index names an index of platforms, as registries serve them.
    fn layout() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let blobs = dir.path().join("blobs/sha256");
        std::fs::create_dir_all(&blobs).expect("blobs");
        let write = |d: &str, json: serde_json::Value| {
            std::fs::write(blobs.join(&d[7..]), json.to_string()).expect("blob");
        };
        write(
            &digest_of('c'),
            serde_json::json!({"config": {"Labels": {"a": "b"}}, "rootfs": {"diff_ids": [digest_of('a')]}}),
        );
        write(
            &digest_of('d'),
            serde_json::json!({
                "schemaVersion": 2,
                "config": {"digest": digest_of('c'), "size": 2, "mediaType": "application/vnd.oci.image.config.v1+json"},
                "layers": [{"digest": digest_of('e'), "size": 42, "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip"}]
            }),
        );
        write(
            &digest_of('f'),
            serde_json::json!({"schemaVersion": 2, "manifests": [manifest(&digest_of('d'))]}),
        );
        let index =
            serde_json::json!({"schemaVersion": 2, "manifests": [manifest(&digest_of('f'))]});
        std::fs::write(dir.path().join("index.json"), index.to_string()).expect("index");
        dir
    }

    /// A descriptor of the manifest `digest` names.
    fn manifest(digest: &str) -> serde_json::Value {
        serde_json::json!({"digest": digest, "size": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json"})
    }

    #[test]
    fn a_layout_is_read_through_its_index_of_platforms() {
        let dir = layout();
        let image = Source::folder(dir.path()).image().expect("image");
        assert_eq!(image.config["config"]["Labels"]["a"], "b");
        assert_eq!(
            image.layers,
            vec![Layer {
                member: format!("blobs/sha256/{}", "e".repeat(64)),
                name: digest_of('e'),
                media_type: Some("application/vnd.oci.image.layer.v1.tar+gzip".into()),
                size: Some(42),
                diff_id: Some(digest_of('a')),
            }]
        );
    }

    #[test]
    fn a_digest_that_leaves_the_layout_is_refused() {
        let dir = layout();
        let index = serde_json::json!({"schemaVersion": 2, "manifests": [manifest("sha256:../../index.json")]});
        std::fs::write(dir.path().join("index.json"), index.to_string()).expect("index");
        assert!(Source::folder(dir.path()).image().is_err());
    }

    #[test]
    fn a_missing_blob_is_named() {
        let dir = layout();
        std::fs::remove_file(dir.path().join("blobs/sha256").join("d".repeat(64))).expect("rm");
        let error = Source::folder(dir.path()).image().expect_err("no manifest");
        assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
        assert!(error
            .to_string()
            .starts_with(&format!("blobs/sha256/{}: ", "d".repeat(64))));
    }

    #[test]
    fn a_docker_archive_names_its_members() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("image.tar");
        let mut builder = tar::Builder::new(std::fs::File::create(&path).expect("tar"));
        let mut add = |name: &str, bytes: &[u8]| {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder
                .append_data(&mut header, name, bytes)
                .expect("member");
        };
        add(
            "manifest.json",
            br#"[{"Config": "c.json", "Layers": ["l/layer.tar"]}]"#,
        );
        add("c.json", br#"{"config": {}}"#);
        add("l/layer.tar", b"");
        builder.finish().expect("finish");
        drop(builder);
        let source = Source::tar(&path).expect("index");
        let image = source.image().expect("image");
        assert_eq!(image.layers.len(), 1);
        assert_eq!(image.layers[0].member, "l/layer.tar");
        assert_eq!(image.layers[0].name, "l/layer.tar");
        assert!(source.has("c.json"));
        assert!(source.read_all("l/layer.tar").expect("layer").is_empty());
    }
}
