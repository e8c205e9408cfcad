//! What changed between an SBOM and an image's SBOM now: each package, kernel, module or
//! firmware file added, removed or changed (version or sha256), named.

use std::collections::BTreeMap;

use crate::model::{props, Bom, Component, Kind};

/// One difference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// In the image, not in the SBOM.
    Added(String),
    /// In the SBOM, not in the image.
    Removed(String),
    /// In both, with another version or digest.
    Changed {
        /// The component.
        what: String,
        /// What the SBOM says.
        was: String,
        /// What the image holds.
        now: String,
    },
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Difference::Added(what) => write!(f, "added: {what}"),
            Difference::Removed(what) => write!(f, "removed: {what}"),
            Difference::Changed { what, was, now } => write!(f, "changed: {what}: {was} → {now}"),
        }
    }
}

/// What names a component across versions: a package by name and architecture, a module or
/// firmware by its file, the kernel by name. Downloads are the build's, not the image's.
fn identity(c: &Component) -> Option<String> {
    let file = || c.property(props::FILE).unwrap_or(&c.name).to_owned();
    match c.kind {
        Kind::Library => Some(format!(
            "package {}:{}",
            c.name,
            c.property(props::ARCH).unwrap_or("")
        )),
        Kind::OperatingSystem => Some(format!("kernel {}", c.name)),
        Kind::DeviceDriver => Some(format!("module {} ({})", c.name, file())),
        Kind::Firmware => Some(format!("firmware {}", file())),
        Kind::Data => Some(format!("{} (unread)", c.name)),
        Kind::Container | Kind::Application | Kind::File => None,
    }
}

/// What must stay the same: version and sha256.
fn fingerprint(c: &Component) -> String {
    let version = c.version.as_deref().unwrap_or("(no version)");
    match c.sha256() {
        Some(sha) => format!("{version} sha256:{sha}"),
        None => version.to_owned(),
    }
}

fn index(bom: &Bom) -> BTreeMap<String, String> {
    bom.components
        .iter()
        .filter_map(|c| Some((identity(c)?, fingerprint(c))))
        .collect()
}

/// The differences from `recorded` (the SBOM) to `current` (the image's), sorted by component.
pub fn diff(recorded: &Bom, current: &Bom) -> Vec<Difference> {
    let was = index(recorded);
    let now = index(current);
    let mut out = Vec::new();
    for (what, old) in &was {
        match now.get(what) {
            None => out.push(Difference::Removed(format!("{what} {old}"))),
            Some(new) if new != old => out.push(Difference::Changed {
                what: what.clone(),
                was: old.clone(),
                now: new.clone(),
            }),
            Some(_) => {}
        }
    }
    for (what, new) in &now {
        if !was.contains_key(what) {
            out.push(Difference::Added(format!("{what} {new}")));
        }
    }
    out
}
