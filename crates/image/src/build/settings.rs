//! How a build is asked for: which outputs, where, and with what caches.

use std::path::PathBuf;

use crate::compression::Codec;

/// Which outputs to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Formats {
    /// An OCI image layout (`out/<image>/oci`).
    pub oci: bool,
    /// A docker-archive (`out/<image>/<image>.tar`), what Warewulf imports.
    pub docker_archive: bool,
    /// A plain rootfs folder (`out/<image>/rootfs`).
    pub chroot: bool,
}

impl Default for Formats {
    fn default() -> Self {
        Self {
            oci: true,
            docker_archive: true,
            chroot: false,
        }
    }
}

/// How to build.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The project root (role files are read from it).
    pub project_root: PathBuf,
    /// Where outputs go (`out/<image>/...`).
    pub out: PathBuf,
    /// Which outputs.
    pub formats: Formats,
    /// Run every role even when its layer is cached.
    pub no_cache: bool,
    /// The imgbuild binary (the sandbox re-runs it).
    pub exe: PathBuf,
    /// The cache folder (bases, layers, blobs).
    pub cache_dir: PathBuf,
    /// Seconds since 1970 for every timestamp in the image.
    pub epoch: u64,
    /// How layers are compressed (the base layer stays gzip: it is shared by every image).
    pub codec: Codec,
    /// Write one layer holding the whole rootfs instead of one per role.
    pub squash: bool,
    /// Run verify before writing the outputs (and fail the build when a check fails).
    pub verify: bool,
    /// The layer cache kept in a registry (`--cache-from`, `--cache-to`), when one is set.
    pub remote: std::sync::Arc<crate::cache::remote::RemoteCache>,
    /// The module-signing secret (`--secret id=module-signing`), for the roles that build
    /// modules; its certificate is then the image's signer, which verify checks.
    pub module_signing: Option<std::sync::Arc<crate::signing::ModuleSigning>>,
    /// The site's signature policy (`policy.json`), which a registry base must satisfy.
    pub signature_policy: Option<std::sync::Arc<registry::policy::SitePolicy>>,
    /// The cores split between the images built at once (`--jobs`), when several are.
    pub cpu_shares: Option<std::sync::Arc<super::cpu_share::CpuShares>>,
}

impl Settings {
    /// The package download cache every build of this cache folder shares (apt's `.deb`s).
    pub fn package_pool(&self) -> PathBuf {
        self.cache_dir.join("packages/apt")
    }

    /// The compile cache every build of this cache folder shares; none with `--no-cache` (a
    /// build asked to run everything again compiles everything again) or with
    /// `IMGBUILD_NO_COMPILE_CACHE=1`.
    pub fn compile_cache(&self) -> Option<engine::compile_cache::CompileCache> {
        let off = std::env::var_os("IMGBUILD_NO_COMPILE_CACHE")
            .is_some_and(|v| !v.is_empty() && v != "0");
        if self.no_cache || off {
            return None;
        }
        // Best effort, as the package cache is: without it the compilers run as they are.
        engine::compile_cache::CompileCache::new(&self.cache_dir.join("compile")).ok()
    }
}
