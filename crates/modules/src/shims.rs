//! The folders of imgbuild's command shims in the sandbox: the engine puts them first on a
//! task's `PATH`; the package modules hand dpkg the same `PATH`.

use crate::target::BASE_PATH;

/// Where `uname` answers with the image's pinned kernel (the engine's `pinned_uname`).
pub const UNAME_SHIM_DIR: &str = "/run/imgbuild/bin";

/// Where the initramfs builders are deferred to the image's one build (the engine's
/// `initramfs`).
pub const INITRAMFS_SHIM_DIR: &str = "/run/imgbuild/initramfs";

/// Where the image's compilers go through the compile cache (the engine's `compile_cache`; the
/// folder exists only in a sandbox whose image has a compiler).
pub const COMPILE_SHIM_DIR: &str = "/run/imgbuild/cc";

/// The `PATH` dpkg runs maintainer scripts with: the initramfs shims, the compilers through the
/// compile cache (DKMS builds in a postinst), the pinned `uname`, then the base `PATH`. apt sets
/// dpkg's PATH itself, so an `apt` task passes this as `DPkg::Path`.
pub fn package_path() -> String {
    format!("{INITRAMFS_SHIM_DIR}:{COMPILE_SHIM_DIR}:{UNAME_SHIM_DIR}:{BASE_PATH}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_path_puts_the_shims_first() {
        assert!(package_path()
            .starts_with("/run/imgbuild/initramfs:/run/imgbuild/cc:/run/imgbuild/bin:"));
        assert!(package_path().ends_with(BASE_PATH));
    }
}
