//! The image's own labels: what a build promises about the image (its pinned kernel, MOFED and
//! NVIDIA versions, an initramfs, no build tools, a subnet manager allowed, the units its boot
//! may see fail, the recipe it came from, the modules' signer). The build writes them; `verify`,
//! `boot` and the SBOM read them back, so an image checked later is held to what it was built
//! for. Their one typed home.

use std::collections::BTreeMap;

use crate::flavor::NvidiaFlavor;

/// The pinned kernel.
pub const KERNEL: &str = "io.imgbuild.kernel";
/// The MOFED version `ofed_info -s` reports.
pub const MOFED: &str = "io.imgbuild.mofed";
/// The DOCA version whose DOCA-OFED the image holds (in place of MLNX_OFED).
pub const DOCA: &str = "io.imgbuild.doca";
/// The NVIDIA driver version.
pub const NVIDIA: &str = "io.imgbuild.nvidia";
/// The flavour of the NVIDIA kernel modules (`open`, `proprietary`).
pub const NVIDIA_FLAVOR: &str = "io.imgbuild.nvidia-flavor";
/// `yes`: the recipe builds an initramfs.
pub const INITRAMFS: &str = "io.imgbuild.initramfs";
/// `yes`: the build removed its build-only packages.
pub const NO_BUILD_TOOLS: &str = "io.imgbuild.no-build-tools";
/// `yes`: a subnet-manager image, which may enable `opensmd`.
pub const ALLOW_OPENSM: &str = "io.imgbuild.allow-opensm";
/// Units expected to fail when booted without Warewulf's overlays, comma-separated.
pub const BOOT_EXPECT_FAILED: &str = "io.imgbuild.boot-expect-failed";
/// A digest of every file the plan read.
pub const RECIPE_DIGEST: &str = "io.imgbuild.recipe-digest";
/// The certificate the out-of-tree modules were signed with: `sha256:<fingerprint of its DER>`.
pub const MODULE_SIGNER: &str = "io.imgbuild.module-signer";
/// That certificate itself (public), its DER in base64 on one line: with it `verify` checks the
/// image's module signatures from the image alone (`--signer-cert` gives another one).
pub const MODULE_SIGNER_CERT: &str = "io.imgbuild.module-signer-cert";

/// What an image's labels say it was built for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageLabels {
    /// The pinned kernel.
    pub kernel: Option<String>,
    /// The MOFED version.
    pub mofed: Option<String>,
    /// The DOCA version (DOCA-OFED).
    pub doca: Option<String>,
    /// The NVIDIA driver version.
    pub nvidia: Option<String>,
    /// The flavour of the NVIDIA kernel modules.
    pub nvidia_flavor: Option<NvidiaFlavor>,
    /// The recipe builds an initramfs.
    pub initramfs: bool,
    /// The image holds no build tools.
    pub no_build_tools: bool,
    /// A subnet manager may be enabled.
    pub allow_opensm: bool,
    /// Units whose boot failure is expected.
    pub boot_expect_failed: Vec<String>,
    /// The recipe's digest.
    pub recipe_digest: Option<String>,
    /// The module signer's certificate fingerprint (`sha256:<hex>`).
    pub module_signer: Option<String>,
    /// The module signer's certificate, base64 DER.
    pub module_signer_cert: Option<String>,
}

const YES: &str = "yes";

impl ImageLabels {
    /// Reads them from an image config's labels.
    pub fn read(labels: &BTreeMap<String, String>) -> Self {
        let text = |key: &str| labels.get(key).cloned();
        let flag = |key: &str| labels.get(key).is_some_and(|v| v == YES);
        Self {
            kernel: text(KERNEL),
            mofed: text(MOFED),
            doca: text(DOCA),
            nvidia: text(NVIDIA),
            nvidia_flavor: labels
                .get(NVIDIA_FLAVOR)
                .and_then(|v| NvidiaFlavor::parse(v)),
            initramfs: flag(INITRAMFS),
            no_build_tools: flag(NO_BUILD_TOOLS),
            allow_opensm: flag(ALLOW_OPENSM),
            boot_expect_failed: labels
                .get(BOOT_EXPECT_FAILED)
                .map(|list| {
                    list.split(',')
                        .map(str::trim)
                        .filter(|u| !u.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            recipe_digest: text(RECIPE_DIGEST),
            module_signer: text(MODULE_SIGNER),
            module_signer_cert: text(MODULE_SIGNER_CERT),
        }
    }

    /// Reads them from an image config (`{"config": {"Labels": {...}}}`).
    pub fn of_config(config: &serde_json::Value) -> Self {
        let labels = config["config"]["Labels"]
            .as_object()
            .map(|map| {
                map.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        Self::read(&labels)
    }

    /// The labels to write; a flag that is off and a value that is absent are left out.
    pub fn write(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::new();
        for (key, value) in [
            (KERNEL, &self.kernel),
            (MOFED, &self.mofed),
            (DOCA, &self.doca),
            (NVIDIA, &self.nvidia),
            (RECIPE_DIGEST, &self.recipe_digest),
            (MODULE_SIGNER, &self.module_signer),
            (MODULE_SIGNER_CERT, &self.module_signer_cert),
        ] {
            if let Some(value) = value {
                labels.insert(key.to_owned(), value.clone());
            }
        }
        if let Some(flavor) = self.nvidia_flavor {
            labels.insert(NVIDIA_FLAVOR.to_owned(), flavor.as_str().to_owned());
        }
        for (key, on) in [
            (INITRAMFS, self.initramfs),
            (NO_BUILD_TOOLS, self.no_build_tools),
            (ALLOW_OPENSM, self.allow_opensm),
        ] {
            if on {
                labels.insert(key.to_owned(), YES.to_owned());
            }
        }
        if !self.boot_expect_failed.is_empty() {
            labels.insert(
                BOOT_EXPECT_FAILED.to_owned(),
                self.boot_expect_failed.join(","),
            );
        }
        labels
    }

    /// The labels naming the modules' signer: the certificate's SHA-256 fingerprint (hex) and
    /// its DER.
    pub fn with_signer(self, fingerprint: &str, der: &[u8]) -> Self {
        Self {
            module_signer: Some(format!("sha256:{fingerprint}")),
            module_signer_cert: Some(base64_of(der)),
            ..self
        }
    }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `bytes` in base64 (RFC 4648, padded), on one line.
fn base64_of(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_back_what_was_written() {
        let built = ImageLabels {
            kernel: Some("6.1.0-50-amd64".into()),
            mofed: Some("24.10-2.1.8.0".into()),
            doca: Some("3.2.1".into()),
            nvidia: None,
            nvidia_flavor: Some(NvidiaFlavor::Open),
            initramfs: true,
            no_build_tools: false,
            allow_opensm: true,
            boot_expect_failed: vec!["munge.service".into(), "sssd-*.socket".into()],
            recipe_digest: Some("sha256:abc".into()),
            module_signer: None,
            module_signer_cert: None,
        };
        let written = built.write();
        assert_eq!(written[ALLOW_OPENSM], "yes");
        assert_eq!(written[NVIDIA_FLAVOR], "open");
        assert!(!written.contains_key(NVIDIA) && !written.contains_key(NO_BUILD_TOOLS));
        assert_eq!(ImageLabels::read(&written), built);
        let config = serde_json::json!({"config": {"Labels": written}});
        assert_eq!(ImageLabels::of_config(&config), built);
    }

    #[test]
    fn the_signer_labels_carry_the_fingerprint_and_the_der_in_padded_base64() {
        let labels = ImageLabels::default().with_signer("ab12", b"any carnal pleas");
        let written = labels.write();
        assert_eq!(written[MODULE_SIGNER], "sha256:ab12");
        assert_eq!(written[MODULE_SIGNER_CERT], "YW55IGNhcm5hbCBwbGVhcw==");
        assert_eq!(base64_of(b"any carnal pleasu"), "YW55IGNhcm5hbCBwbGVhc3U=");
        assert_eq!(base64_of(b"any carnal pleasur"), "YW55IGNhcm5hbCBwbGVhc3Vy");
        assert_eq!(ImageLabels::read(&written), labels);
    }
}
