//! The SBOM of one image, assembled and written reproducibly: components sorted, no
//! timestamp, the serial number a UUID derived from the document's own bytes.

use sha2::{Digest, Sha256};
use spec::ImageLabels;
use verify::image::Image;
use verify::{Expect, Snapshot};

use crate::components::{self, Distro};
use crate::model::{props, Bom, Component, Hash, Kind, Property};
use crate::SbomError;

/// A file the build downloaded, as `mirror.lock` pins it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Download {
    /// The URL's path (what `mirror.lock` keys pins by).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its sha256, hex.
    pub sha256: String,
}

/// What the SBOM says beyond the image's files.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// The image's name (the recipe, or what the command was given).
    pub name: String,
    /// The image's labels (`io.imgbuild.*`): the recipe's pins.
    pub labels: std::collections::BTreeMap<String, String>,
    /// What the build downloaded, with its pins (empty outside a build).
    pub downloads: Vec<Download>,
}

/// The SBOM of the image read into `snapshot`.
pub fn build(snapshot: &Snapshot, inputs: &Inputs) -> Bom {
    let expect = Expect::of_labels(&ImageLabels::read(&inputs.labels));
    let image = Image::new(snapshot, &expect);
    let distro = Distro::read(snapshot);
    let mut parts = components::packages(snapshot, distro.as_ref());
    parts.extend(components::kernel(&image, distro.as_ref()));
    parts.extend(components::drivers_and_firmware(&image));
    parts.extend(inputs.downloads.iter().map(download));
    parts.sort_by(|a, b| (a.kind, &a.bom_ref, &a.name).cmp(&(b.kind, &b.bom_ref, &b.name)));
    parts.dedup_by(|a, b| a.bom_ref == b.bom_ref);
    let mut subject = Component::new(Kind::Container, &inputs.name)
        .with(props::DISTRO, distro.as_ref().map(Distro::qualifier));
    subject.bom_ref = Some(format!("image:{}", inputs.name));
    let properties = inputs
        .labels
        .iter()
        .filter_map(|(k, v)| {
            let pin = k.strip_prefix("io.imgbuild.")?;
            Some(Property {
                name: format!("{}{pin}", props::PIN_PREFIX),
                value: v.clone(),
            })
        })
        .collect();
    Bom::by_imgbuild(subject, properties, parts)
}

fn download(d: &Download) -> Component {
    let name = d.path.rsplit('/').next().unwrap_or(&d.path);
    let mut c = Component::new(Kind::File, name)
        .with(props::FILE, Some(&d.path))
        .with(props::SIZE, Some(d.size.to_string()));
    c.bom_ref = Some(format!("download:{}", d.path));
    c.hashes = vec![Hash::sha256(&d.sha256)];
    c
}

/// The document's bytes (pretty JSON, a final newline), with its serial number set to a UUID
/// (version 8, RFC 9562) derived from the sha256 of the document written without one.
pub fn to_bytes(bom: &Bom) -> Result<Vec<u8>, SbomError> {
    let mut bom = bom.clone();
    bom.serial_number = None;
    let unserialed = serde_json::to_vec(&bom)?;
    let digest = Sha256::digest(&unserialed);
    let mut b: [u8; 16] = [0; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    bom.serial_number = Some(format!(
        "urn:uuid:{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    ));
    let mut bytes = serde_json::to_vec_pretty(&bom)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Reads an SBOM this crate (or another CycloneDX 1.5 writer) wrote.
pub fn parse(bytes: &[u8]) -> Result<Bom, SbomError> {
    let bom: Bom = serde_json::from_slice(bytes)?;
    if bom.bom_format != "CycloneDX" {
        return Err(SbomError::NotCycloneDx(bom.bom_format));
    }
    Ok(bom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{diff, Difference};
    use std::path::Path;

    const KVER: &str = "6.1.0-50-amd64";

    fn write(root: &Path, rel: &str, bytes: &[u8]) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, bytes).expect("write");
    }

    /// A rootfs with dpkg's database, a packaged and an installer's module, an in-tree module
    /// and a firmware file.
    fn rootfs(root: &Path, mlx_version: &str) {
        write(root, "etc/os-release", b"ID=debian\nVERSION_ID=\"12\"\n");
        write(root, &format!("boot/vmlinuz-{KVER}"), b"kernel");
        let status = format!("Package: mlnx-ofed-kernel-modules\nStatus: install ok installed\nArchitecture: amd64\nSource: mlnx-ofed-kernel\nVersion: {mlx_version}\n\nPackage: libc6\nStatus: install ok installed\nArchitecture: amd64\nSource: glibc\nVersion: 2.36-9+deb12u4\n");
        write(root, "var/lib/dpkg/status", status.as_bytes());
        write(
            root,
            "var/lib/dpkg/info/mlnx-ofed-kernel-modules.list",
            format!("/lib/modules/{KVER}/updates/mlx5_core.ko\n/lib/firmware/mlx/fw.bin\n")
                .as_bytes(),
        );
        let vermagic = format!("{KVER} SMP preempt mod_unload modversions ");
        let mlx = verify::modinfo::fake_module(&[
            ("version", mlx_version),
            ("srcversion", "ABC123"),
            ("vermagic", &vermagic),
            ("name", "mlx5_core"),
        ]);
        let keys = tempfile::tempdir().expect("tempdir");
        let (key, cert) = verify::signing_fixture::signing_key(keys.path(), "Site MOK");
        let mlx = verify::signing_fixture::sign(&mlx, &key, &cert, &["-noattr"]);
        write(
            root,
            &format!("lib/modules/{KVER}/updates/mlx5_core.ko"),
            &mlx,
        );
        let nvidia = verify::modinfo::fake_module(&[
            ("version", "580.65.06"),
            ("vermagic", &vermagic),
            ("name", "nvidia"),
        ]);
        write(
            root,
            &format!("lib/modules/{KVER}/extra/nvidia.ko"),
            &nvidia,
        );
        let inbox = verify::modinfo::fake_module(&[("intree", "Y"), ("name", "e1000")]);
        write(root, &format!("lib/modules/{KVER}/kernel/e1000.ko"), &inbox);
        write(root, "lib/firmware/mlx/fw.bin", b"firmware");
    }

    fn sbom_of(root: &Path) -> Bom {
        let snapshot = Snapshot::from_dir(root).expect("snapshot");
        let mut labels = std::collections::BTreeMap::new();
        labels.insert("io.imgbuild.kernel".to_owned(), KVER.to_owned());
        labels.insert("io.imgbuild.mofed".to_owned(), "24.10".to_owned());
        let inputs = Inputs {
            name: "test".into(),
            labels,
            downloads: Vec::new(),
        };
        build(&snapshot, &inputs)
    }

    fn named<'a>(bom: &'a Bom, name: &str) -> &'a Component {
        bom.components
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no component {name}"))
    }

    #[test]
    fn packages_modules_firmware_and_pins_are_listed() {
        let dir = tempfile::tempdir().expect("tempdir");
        rootfs(dir.path(), "24.10-OFED");
        let bom = sbom_of(dir.path());
        let libc = named(&bom, "libc6");
        assert_eq!(
            libc.purl.as_deref(),
            Some("pkg:deb/debian/libc6@2.36-9%2Bdeb12u4?arch=amd64&distro=debian-12")
        );
        assert_eq!(libc.property(props::SOURCE), Some("glibc"));
        let mlx = named(&bom, "mlx5_core");
        assert_eq!(mlx.kind, Kind::DeviceDriver);
        assert_eq!(mlx.version.as_deref(), Some("24.10-OFED"));
        assert_eq!(mlx.property(props::SRCVERSION), Some("ABC123"));
        assert_eq!(
            mlx.property(props::SIGNER),
            Some("Site MOK module signing key")
        );
        assert_eq!(
            mlx.property(props::ORIGIN),
            Some("mlnx-ofed-kernel-modules")
        );
        assert_eq!(mlx.sha256().map(str::len), Some(64));
        let nvidia = named(&bom, "nvidia");
        assert_eq!(nvidia.property(props::ORIGIN), Some("installer"));
        assert_eq!(nvidia.property(props::SIGNER), None);
        assert!(bom.components.iter().all(|c| c.name != "e1000"));
        let fw = named(&bom, "mlx/fw.bin");
        assert_eq!(fw.kind, Kind::Firmware);
        let want: String = Sha256::digest(b"firmware")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(fw.sha256(), Some(want.as_str()));
        assert_eq!(named(&bom, "linux").version.as_deref(), Some(KVER));
        assert!(bom
            .metadata
            .properties
            .iter()
            .any(|p| p.name == "imgbuild:pin:mofed" && p.value == "24.10"));
    }

    #[test]
    fn the_same_image_gives_the_same_bytes_and_a_change_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        rootfs(dir.path(), "24.10-OFED");
        let first = to_bytes(&sbom_of(dir.path())).expect("bytes");
        let second = to_bytes(&sbom_of(dir.path())).expect("bytes");
        assert_eq!(first, second);
        let recorded = parse(&first).expect("parse");
        assert!(recorded
            .serial_number
            .as_deref()
            .is_some_and(|s| s.starts_with("urn:uuid:") && s.len() == 45));
        assert!(diff(&recorded, &sbom_of(dir.path())).is_empty());
        rootfs(dir.path(), "24.10-OTHER");
        std::fs::remove_file(dir.path().join("lib/firmware/mlx/fw.bin")).expect("rm");
        let changes = diff(&recorded, &sbom_of(dir.path()));
        let shown: Vec<String> = changes.iter().map(ToString::to_string).collect();
        assert!(
            shown.iter().any(|d| d.starts_with(
                "changed: package mlnx-ofed-kernel-modules:amd64: 24.10-OFED → 24.10-OTHER"
            )),
            "{shown:?}"
        );
        assert!(
            shown
                .iter()
                .any(|d| d.starts_with("changed: module mlx5_core")),
            "{shown:?}"
        );
        assert!(changes.iter().any(|d| matches!(d, Difference::Removed(w) if w.starts_with("firmware /lib/firmware/mlx/fw.bin"))));
        assert_ne!(to_bytes(&sbom_of(dir.path())).expect("bytes"), first);
    }
}
