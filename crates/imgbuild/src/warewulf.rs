//! The Warewulf version that imports the image: what it can read and the command that imports
//! it. Warewulf 4.5 and 4.6 import a docker-archive, a rootfs folder or a `docker://`
//! reference (not an OCI layout folder) with umoci 0.4.7, which reads gzip layers only (the
//! docker-archive's layers are uncompressed; a pushed image's are as built); 4.5 names images
//! containers (`wwctl container import`), 4.6 renamed them (`wwctl image import`). Either
//! refuses to replace an image of the same name without `--force`.

use clap::ValueEnum;

/// A Warewulf release line.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum WarewulfVersion {
    /// 4.5: `wwctl container import`, gzip layers only.
    #[value(name = "4.5")]
    V4_5,
    /// 4.6: `wwctl image import`, gzip layers only.
    #[value(name = "4.6")]
    V4_6,
    /// 4.7: `wwctl image import`, gzip or zstd layers.
    #[value(name = "4.7")]
    V4_7,
}

impl WarewulfVersion {
    /// Whether this version imports zstd-compressed layers.
    pub fn reads_zstd(self) -> bool {
        self == WarewulfVersion::V4_7
    }

    /// The command that imports (or replaces) `archive` as the image `name`.
    pub fn import_command(self, archive: &str, name: &str) -> String {
        let noun = match self {
            WarewulfVersion::V4_5 => "container",
            WarewulfVersion::V4_6 | WarewulfVersion::V4_7 => "image",
        };
        format!("wwctl {noun} import --force {archive} {name}")
    }

    /// Its version text.
    pub fn as_str(self) -> &'static str {
        match self {
            WarewulfVersion::V4_5 => "4.5",
            WarewulfVersion::V4_6 => "4.6",
            WarewulfVersion::V4_7 => "4.7",
        }
    }
}

/// What a build writes that Warewulf could import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outputs {
    /// A docker-archive (`<image>.tar`).
    pub docker_archive: bool,
    /// A rootfs folder (`--format chroot`).
    pub rootfs: bool,
    /// A registry push (`--push`), imported as `docker://`.
    pub pushed: bool,
    /// Layers compressed with zstd.
    pub zstd: bool,
}

/// Why `version` could import nothing this build writes, and what to do; none when it can.
pub fn refusal(version: WarewulfVersion, outputs: Outputs) -> Option<String> {
    let v = version.as_str();
    if version.reads_zstd() {
        return None;
    }
    if outputs.pushed && outputs.zstd {
        return Some(format!(
            "--push with --compression zstd: Warewulf {v} imports a pushed image with umoci 0.4.7, which cannot read zstd layers; build with --compression gzip (the default), or name the Warewulf that imports the image (--warewulf 4.7)"
        ));
    }
    (!outputs.docker_archive && !outputs.rootfs && !outputs.pushed).then(|| {
        format!(
            "--format: Warewulf {v} cannot import an OCI layout folder; add --format docker-archive (or chroot), or --push the image"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_version_has_its_command_and_its_layers() {
        assert_eq!(
            WarewulfVersion::V4_5.import_command("/out/a.tar", "a"),
            "wwctl container import --force /out/a.tar a"
        );
        assert_eq!(
            WarewulfVersion::V4_6.import_command("/out/a.tar", "a"),
            "wwctl image import --force /out/a.tar a"
        );
        let archive = Outputs {
            docker_archive: true,
            rootfs: false,
            pushed: false,
            zstd: true,
        };
        assert_eq!(refusal(WarewulfVersion::V4_5, archive), None);
        let pushed_zstd = Outputs {
            pushed: true,
            ..archive
        };
        assert!(refusal(WarewulfVersion::V4_6, pushed_zstd).is_some_and(|m| m.contains("4.6")));
        assert_eq!(refusal(WarewulfVersion::V4_7, pushed_zstd), None);
        let oci_only = Outputs {
            docker_archive: false,
            ..archive
        };
        assert!(refusal(WarewulfVersion::V4_5, oci_only).is_some_and(|m| m.contains("OCI layout")));
    }
}
