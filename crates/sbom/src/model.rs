//! The subset of CycloneDX 1.5 (JSON) an image's SBOM uses, as typed structs.

use serde::{Deserialize, Serialize};

/// The spec version written.
pub const SPEC_VERSION: &str = "1.5";

/// A CycloneDX document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bom {
    /// Always `CycloneDX`.
    pub bom_format: String,
    /// `1.5`.
    pub spec_version: String,
    /// `urn:uuid:...`, derived from the document's content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial_number: Option<String>,
    /// The document's version, 1.
    pub version: u32,
    /// What the document describes.
    pub metadata: Metadata,
    /// Everything in the image, sorted.
    #[serde(default)]
    pub components: Vec<Component>,
}

impl Bom {
    /// A document imgbuild (this version) writes about `subject`, with its `properties` and
    /// `components`.
    pub fn by_imgbuild(
        subject: Component,
        properties: Vec<Property>,
        components: Vec<Component>,
    ) -> Self {
        let mut tool = Component::new(Kind::Application, "imgbuild");
        tool.version = Some(env!("CARGO_PKG_VERSION").to_owned());
        Self {
            bom_format: "CycloneDX".to_owned(),
            spec_version: SPEC_VERSION.to_owned(),
            serial_number: None,
            version: 1,
            metadata: Metadata {
                tools: Tools {
                    components: vec![tool],
                },
                component: subject,
                properties,
            },
            components,
        }
    }
}

/// The document's subject and how it was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// The tools that wrote it.
    #[serde(default)]
    pub tools: Tools,
    /// The image.
    pub component: Component,
    /// The recipe's pins (`imgbuild:pin:*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
}

/// CycloneDX 1.5's tools object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tools {
    /// The tools, as components.
    #[serde(default)]
    pub components: Vec<Component>,
}

/// A component's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The image.
    Container,
    /// An OS package.
    Library,
    /// A tool.
    Application,
    /// The kernel.
    OperatingSystem,
    /// A kernel module.
    DeviceDriver,
    /// A firmware file.
    Firmware,
    /// A downloaded artifact.
    File,
    /// Data the image holds that could not be read (a package database).
    Data,
}

/// One component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Component {
    /// Its kind.
    #[serde(rename = "type")]
    pub kind: Kind,
    /// Its reference, unique in the document.
    #[serde(rename = "bom-ref", default, skip_serializing_if = "Option::is_none")]
    pub bom_ref: Option<String>,
    /// Its name.
    pub name: String,
    /// Its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Its package URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purl: Option<String>,
    /// Its digests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hashes: Vec<Hash>,
    /// Its licences (an SPDX expression each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub licenses: Vec<License>,
    /// What CycloneDX has no field for (`imgbuild:*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
}

impl Component {
    /// A component with a name and nothing else.
    pub fn new(kind: Kind, name: impl Into<String>) -> Self {
        Self {
            kind,
            bom_ref: None,
            name: name.into(),
            version: None,
            purl: None,
            hashes: Vec::new(),
            licenses: Vec::new(),
            properties: Vec::new(),
        }
    }

    /// Adds the property `name` when `value` is given.
    pub fn with(mut self, name: &str, value: Option<impl Into<String>>) -> Self {
        if let Some(value) = value {
            self.properties.push(Property {
                name: name.to_owned(),
                value: value.into(),
            });
        }
        self
    }

    /// The value of the property `name`.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.value.as_str())
    }

    /// Its SHA-256, hex.
    pub fn sha256(&self) -> Option<&str> {
        self.hashes
            .iter()
            .find(|h| h.alg == SHA_256)
            .map(|h| h.content.as_str())
    }
}

/// A licence as CycloneDX writes an SPDX expression.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct License {
    /// `MIT OR Apache-2.0`.
    pub expression: String,
}

/// CycloneDX's name of SHA-256.
pub const SHA_256: &str = "SHA-256";

/// A digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hash {
    /// The algorithm (`SHA-256`).
    pub alg: String,
    /// Hex.
    pub content: String,
}

impl Hash {
    /// A SHA-256 digest.
    pub fn sha256(hex: impl Into<String>) -> Self {
        Self {
            alg: SHA_256.to_owned(),
            content: hex.into(),
        }
    }
}

/// A name and a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Property {
    /// `imgbuild:...`.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// The property names this SBOM writes.
pub mod props {
    /// A file's path in the image.
    pub const FILE: &str = "imgbuild:file";
    /// A package's architecture.
    pub const ARCH: &str = "imgbuild:arch";
    /// A package's source package.
    pub const SOURCE: &str = "imgbuild:source";
    /// The package a file came from, or `installer`.
    pub const ORIGIN: &str = "imgbuild:origin";
    /// A module's vermagic.
    pub const VERMAGIC: &str = "imgbuild:vermagic";
    /// A module's srcversion.
    pub const SRCVERSION: &str = "imgbuild:srcversion";
    /// A module's signer.
    pub const SIGNER: &str = "imgbuild:signer";
    /// The kernel a module is for.
    pub const KERNEL: &str = "imgbuild:kernel";
    /// The distribution (`debian-12`).
    pub const DISTRO: &str = "imgbuild:distro";
    /// The package manager whose database listed a package.
    pub const PACKAGE_MANAGER: &str = "imgbuild:package-manager";
    /// A download's size in bytes.
    pub const SIZE: &str = "imgbuild:size";
    /// A recipe pin, `imgbuild:pin:<label>`.
    pub const PIN_PREFIX: &str = "imgbuild:pin:";
    /// Why something of the image could not be read.
    pub const ERROR: &str = "imgbuild:error";
}
