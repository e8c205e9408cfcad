//! The components read from an image's files: its OS packages, its kernel, its out-of-tree
//! modules and its firmware.

use std::collections::BTreeMap;

use verify::image::{Image, ModuleFile};
use verify::Snapshot;

use crate::model::{props, Component, Hash, Kind};
use crate::purl;
use crate::{dpkg, rpm};

/// The distribution, from `os-release`: its `ID` and `VERSION_ID`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Distro {
    /// `debian`, `ubuntu`, `rocky`.
    pub id: String,
    /// `12`, `22.04`.
    pub version: String,
}

impl Distro {
    /// Reads `/etc/os-release`, else `/usr/lib/os-release`.
    pub fn read(snapshot: &Snapshot) -> Option<Distro> {
        let text = snapshot
            .read_text("/etc/os-release")
            .or_else(|| snapshot.read_text("/usr/lib/os-release"))?;
        let value = |key: &str| {
            text.lines().find_map(|line| {
                let v = line.strip_prefix(key)?.strip_prefix('=')?;
                Some(v.trim().trim_matches('"').to_owned())
            })
        };
        Some(Distro {
            id: value("ID")?,
            version: value("VERSION_ID").unwrap_or_default(),
        })
    }

    /// `debian-12`, the purl's `distro` qualifier.
    pub fn qualifier(&self) -> String {
        if self.version.is_empty() {
            self.id.clone()
        } else {
            format!("{}-{}", self.id, self.version)
        }
    }
}

/// Every package of dpkg's and rpm's databases, with its purl.
pub fn packages(snapshot: &Snapshot, distro: Option<&Distro>) -> Vec<Component> {
    let mut out = deb_packages(snapshot, distro);
    out.extend(rpm_packages(snapshot, distro));
    out
}

fn deb_packages(snapshot: &Snapshot, distro: Option<&Distro>) -> Vec<Component> {
    let vendor = distro.map(|d| d.id.as_str()).unwrap_or("debian");
    let qualifier = distro.map(Distro::qualifier).unwrap_or_default();
    dpkg::packages(snapshot)
        .unwrap_or_default()
        .into_iter()
        .map(|p| {
            let purl = purl::package(
                "deb",
                vendor,
                &p.name,
                &p.version,
                &[("arch", &p.arch), ("distro", &qualifier)],
            );
            package_component(&p.name, p.version, &p.arch, &p.source, "dpkg", purl)
        })
        .collect()
}

/// rpm's packages; a database that cannot be read is one component saying why, so the SBOM
/// never looks complete when it is not.
fn rpm_packages(snapshot: &Snapshot, distro: Option<&Distro>) -> Vec<Component> {
    let vendor = distro.map(|d| d.id.as_str()).unwrap_or("redhat");
    let qualifier = distro.map(Distro::qualifier).unwrap_or_default();
    match rpm::packages(snapshot) {
        None => Vec::new(),
        Some(Err(why)) => vec![Component::new(Kind::Data, "rpm database")
            .with(props::ERROR, Some(&format!("not read: {why}")))],
        Some(Ok(packages)) => packages
            .into_iter()
            .map(|p| {
                let epoch = p.epoch.map(|e| e.to_string()).unwrap_or_default();
                let purl = purl::package(
                    "rpm",
                    vendor,
                    &p.name,
                    &p.version,
                    &[("arch", &p.arch), ("epoch", &epoch), ("distro", &qualifier)],
                );
                package_component(&p.name, p.version, &p.arch, &p.source, "rpm", purl)
            })
            .collect(),
    }
}

fn package_component(
    name: &str,
    version: String,
    arch: &str,
    source: &str,
    manager: &str,
    purl: String,
) -> Component {
    let mut c = Component::new(Kind::Library, name)
        .with(props::ARCH, Some(arch))
        .with(props::SOURCE, Some(source))
        .with(props::PACKAGE_MANAGER, Some(manager));
    c.version = Some(version);
    c.bom_ref = Some(purl.clone());
    c.purl = Some(purl);
    c
}

/// The kernel the image holds (the pinned one, or its only one; a pin the image has neither
/// `/boot/vmlinuz-K` nor `/lib/modules/K` of is not listed): an `operating-system` named `linux`.
pub fn kernel(image: &Image, distro: Option<&Distro>) -> Option<Component> {
    let kernel = image.kernel_name()?;
    let k = kernel.to_owned();
    if !image.boot_kernels.contains(&k) && !image.module_dirs.contains(&k) {
        return None;
    }
    let mut c = Component::new(Kind::OperatingSystem, "linux")
        .with(props::DISTRO, distro.map(Distro::qualifier));
    c.version = Some(kernel.to_owned());
    c.bom_ref = Some(format!("kernel:{kernel}"));
    Some(c)
}

fn in_modules_or_firmware(path: &str) -> bool {
    path.contains("/modules/") || path.contains("/firmware/")
}

/// The out-of-tree modules (outside the kernel's `kernel/` folder: `updates/`, `extra/`,
/// DKMS's `updates/dkms/`) as `device-driver` components, and each firmware file.
pub fn drivers_and_firmware(image: &Image) -> Vec<Component> {
    let snapshot = image.snapshot;
    let owners = dpkg::owners(snapshot, in_modules_or_firmware);
    let origin = |path: &str, fallback: &str| {
        snapshot
            .resolve(path)
            .and_then(|p| owners.get(&p).cloned())
            .unwrap_or_else(|| fallback.to_owned())
    };
    let mut out: Vec<Component> = image
        .modules
        .iter()
        .filter(|m| !m.rel.starts_with("kernel/"))
        .map(|m| {
            let fallback = if m.rel.starts_with("updates/dkms/") {
                "dkms"
            } else {
                "installer"
            };
            driver(snapshot, m, origin(&m.path, fallback))
        })
        .collect();
    out.extend(firmware(snapshot, &origin));
    out
}

fn driver(snapshot: &Snapshot, m: &ModuleFile, origin: String) -> Component {
    let info = m.info.ok();
    let field = |key: &str| info.and_then(|i| i.get(key));
    let signer = info.and_then(|i| i.signature.signer_name());
    let mut c = Component::new(Kind::DeviceDriver, m.name())
        .with(props::FILE, Some(&m.path))
        .with(props::KERNEL, Some(&m.kernel_dir))
        .with(props::VERMAGIC, field("vermagic"))
        .with(props::SRCVERSION, field("srcversion"))
        .with(props::SIGNER, signer)
        .with(props::ORIGIN, Some(origin));
    c.version = field("version").map(str::to_owned);
    c.bom_ref = Some(format!("module:{}", m.path));
    c.hashes = snapshot
        .sha256(&m.path)
        .map(Hash::sha256)
        .into_iter()
        .collect();
    c
}

fn firmware(snapshot: &Snapshot, origin: &dyn Fn(&str, &str) -> String) -> Vec<Component> {
    let mut files: BTreeMap<String, Component> = BTreeMap::new();
    for (rel, entry) in snapshot.walk_under("/lib/firmware") {
        if entry.kind != verify::snapshot::Kind::File {
            continue;
        }
        let path = format!("/lib/firmware/{rel}");
        let mut c = Component::new(Kind::Firmware, rel.clone())
            .with(props::FILE, Some(&path))
            .with(props::ORIGIN, Some(origin(&path, "installer")));
        c.bom_ref = Some(format!("firmware:{path}"));
        c.hashes = snapshot
            .sha256(&path)
            .map(Hash::sha256)
            .into_iter()
            .collect();
        files.insert(path, c);
    }
    files.into_values().collect()
}
