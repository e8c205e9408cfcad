//! A download cache for packages shared by every build on the machine, kept out of the layers.
//!
//! A sandbox mounts an overlay on the image's `/var/cache/apt/archives`: the shared pool is its
//! read-only lower, and what apt downloads lands in an upper folder of the sandbox's own. So apt
//! finds every package an earlier build fetched (and checks it against the index's hash before
//! use, fetching it again when it does not match), its lock file is the sandbox's own, an
//! `apt-get clean` in a role empties only the sandbox's view, and the role's layer holds none of
//! the downloads: images do not grow.
//!
//! After each command the sandbox hard-links the new packages from its upper folder into the
//! pool ([`PackageCache::harvest`]): apt renames a download into `archives/` only once it is
//! whole, so the pool only ever gets whole files, and a link is atomic, so builds side by side
//! can share one pool.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where apt keeps downloaded packages in an image.
pub const APT_ARCHIVES: &str = "var/cache/apt/archives";

/// The folders of one sandbox's package cache mount.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PackageCache {
    /// The pool shared by every build (the overlay's lower).
    pub pool: PathBuf,
    /// Where this sandbox's downloads land (the overlay's upper; on the pool's filesystem).
    pub upper: PathBuf,
    /// overlayfs's work folder (beside `upper`).
    pub work: PathBuf,
}

impl PackageCache {
    /// A package cache over `pool` with its upper and work folders under `dir` (made now).
    pub fn new(pool: &Path, dir: &Path) -> io::Result<Self> {
        let cache = Self {
            pool: pool.to_owned(),
            upper: dir.join("packages-upper"),
            work: dir.join("packages-work"),
        };
        for folder in [&cache.pool, &cache.upper, &cache.work] {
            std::fs::create_dir_all(folder)?;
        }
        Ok(cache)
    }

    /// Links the packages downloaded since the last call into the pool; returns how many were
    /// new to it. A name the pool has already is left alone.
    pub fn harvest(&self) -> io::Result<usize> {
        link_packages(&self.upper, &self.pool)
    }

    /// Links every package of the pool into the upper folder, for a sandbox that binds the
    /// upper folder where overlayfs cannot be mounted. [`PackageCache::harvest`] leaves these
    /// names alone (the pool has them), and a removal in the sandbox removes only its link.
    pub fn link_pool_into_upper(&self) -> io::Result<usize> {
        link_packages(&self.pool, &self.upper)
    }

    /// Whether `folder` holds a package file.
    pub fn holds_packages(folder: &Path) -> bool {
        std::fs::read_dir(folder).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| is_package(Path::new(&e.file_name())))
        })
    }

    /// The overlay's mount options (`lowerdir=...,upperdir=...,workdir=...`, and `userxattr`
    /// in a user namespace).
    pub fn mount_data(&self) -> String {
        format!(
            "lowerdir={},upperdir={},workdir={}{}",
            self.pool.display(),
            self.upper.display(),
            self.work.display(),
            oci_layout::mount_options_suffix()
        )
    }
}

/// Hard-links every package file of `from` into `to`, leaving a name `to` has alone; returns
/// how many were new to it.
fn link_packages(from: &Path, to: &Path) -> io::Result<usize> {
    let mut added = 0;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if !is_package(Path::new(&name)) || !entry.file_type()?.is_file() {
            continue;
        }
        match std::fs::hard_link(entry.path(), to.join(&name)) {
            Ok(()) => added += 1,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(added)
}

fn is_package(name: &Path) -> bool {
    name.extension().is_some_and(|e| e == "deb" || e == "udeb")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harvest_links_whole_new_packages_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = PackageCache::new(&dir.path().join("pool"), dir.path()).expect("cache");
        std::fs::write(cache.pool.join("known_1.0_amd64.deb"), b"pool's").expect("write");
        std::fs::write(cache.upper.join("known_1.0_amd64.deb"), b"new").expect("write");
        std::fs::write(cache.upper.join("fresh_2.0_amd64.deb"), b"fresh").expect("write");
        std::fs::write(cache.upper.join("lock"), b"").expect("write");
        std::fs::create_dir(cache.upper.join("partial")).expect("mkdir");
        std::fs::write(cache.upper.join("partial/half_1_amd64.deb"), b"ha").expect("write");

        assert_eq!(cache.harvest().expect("harvest"), 1);
        let pool: Vec<String> = std::fs::read_dir(&cache.pool)
            .expect("pool")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(pool, ["fresh_2.0_amd64.deb", "known_1.0_amd64.deb"]);
        let known = std::fs::read(cache.pool.join("known_1.0_amd64.deb")).expect("read");
        assert_eq!(known, b"pool's", "a name the pool has is left alone");
        // Removed from the sandbox's view (apt-get clean), the pool keeps it.
        std::fs::remove_file(cache.upper.join("fresh_2.0_amd64.deb")).expect("rm");
        let fresh = std::fs::read(cache.pool.join("fresh_2.0_amd64.deb")).expect("read");
        assert_eq!(fresh, b"fresh");
        assert_eq!(cache.harvest().expect("harvest again"), 0);
        assert!(PackageCache::holds_packages(&cache.pool));
        assert!(!PackageCache::holds_packages(&cache.work));
    }

    #[test]
    fn the_pool_linked_into_upper_is_harvested_as_known() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = PackageCache::new(&dir.path().join("pool"), dir.path()).expect("cache");
        std::fs::write(cache.pool.join("known_1.0_amd64.deb"), b"pool's").expect("write");
        std::fs::write(cache.pool.join("Release"), b"not a package").expect("write");
        assert_eq!(cache.link_pool_into_upper().expect("link"), 1);
        assert_eq!(cache.link_pool_into_upper().expect("link again"), 0);
        assert!(!cache.upper.join("Release").exists());
        std::fs::write(cache.upper.join("fresh_2.0_amd64.deb"), b"fresh").expect("write");
        assert_eq!(
            cache.harvest().expect("harvest"),
            1,
            "only the new download"
        );
        std::fs::remove_file(cache.upper.join("known_1.0_amd64.deb")).expect("rm");
        assert!(cache.pool.join("known_1.0_amd64.deb").exists());
    }

    #[test]
    fn mount_data_names_the_three_folders() {
        let cache = PackageCache {
            pool: "/c/packages/apt".into(),
            upper: "/c/work/role-1/packages-upper".into(),
            work: "/c/work/role-1/packages-work".into(),
        };
        assert_eq!(
            cache.mount_data(),
            format!(
                "lowerdir=/c/packages/apt,upperdir=/c/work/role-1/packages-upper,workdir=/c/work/role-1/packages-work{}",
                oci_layout::mount_options_suffix()
            )
        );
    }
}
