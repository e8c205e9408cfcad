//! The overlayfs form of a layer folder (an overlay's upper dir, or a cached layer mounted as a
//! lower): a whiteout is a character device 0/0 named as what it hides, and an opaque folder
//! carries the xattr `trusted.overlay.opaque` = `y` (`user.overlay.opaque` where imgbuild runs in a
//! user namespace, as an ordinary user, and mounts overlays with `userxattr`). Whatever writes a
//! layer from such a folder (a tar's `.wh.` entries) or reads one as layers (verify's snapshot)
//! reads it through [`OverlayEntry::of`].

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::sync::OnceLock;

/// The xattrs overlayfs marks an opaque folder with: the host's root's, then a user
/// namespace's.
const OPAQUE_XATTRS: [&str; 2] = ["trusted.overlay.opaque", "user.overlay.opaque"];

/// Whether this process runs in a user namespace (rootless), where overlayfs keeps its marks in
/// `user.overlay.*` xattrs and only mounts with `userxattr`: the initial namespace maps every id
/// to itself.
pub fn in_user_namespace() -> bool {
    static ANSWER: OnceLock<bool> = OnceLock::new();
    *ANSWER.get_or_init(|| {
        let map = std::fs::read_to_string("/proc/self/uid_map").unwrap_or_default();
        let fields: Vec<&str> = map.split_whitespace().collect();
        fields.as_slice() != ["0", "0", "4294967295"] && !fields.is_empty()
    })
}

/// The xattr this process marks an opaque folder with, as its overlay mounts read it.
pub fn opaque_xattr() -> &'static str {
    OPAQUE_XATTRS[usize::from(in_user_namespace())]
}

/// What an overlay mount's options end with here: `,userxattr` in a user namespace.
pub fn mount_options_suffix() -> &'static str {
    if in_user_namespace() {
        ",userxattr"
    } else {
        ""
    }
}

/// Whether `name` is one of overlayfs's own xattrs, or the mark of a device stand-in: never
/// part of a layer's content.
pub fn is_overlay_xattr(name: &str) -> bool {
    name.starts_with("trusted.overlay.")
        || name.starts_with("user.overlay.")
        || name == crate::DEVICE_XATTR
}

/// What an entry of a folder in overlay form means for the layers below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverlayEntry {
    /// An ordinary file, folder or link.
    Plain,
    /// A folder that hides what the layers below put in it (and holds its own entries).
    OpaqueDir,
    /// A whiteout: hides the entry of this name in the layers below.
    Whiteout,
}

impl OverlayEntry {
    /// Reads the entry at `path`, whose `symlink_metadata` is `meta`.
    pub fn of(path: &Path, meta: &std::fs::Metadata) -> Self {
        let kind = meta.file_type();
        if kind.is_char_device() && meta.rdev() == 0 {
            return Self::Whiteout;
        }
        if kind.is_dir() && is_opaque(path) {
            return Self::OpaqueDir;
        }
        Self::Plain
    }
}

/// Whether the folder at `path` is marked opaque.
pub fn is_opaque(path: &Path) -> bool {
    OPAQUE_XATTRS.iter().any(|name| {
        let mut value = [0u8; 8];
        matches!(rustix::fs::lgetxattr(path, *name, &mut value), Ok(1) if value[0] == b'y')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Marks `dir` opaque as overlayfs does; false where the file system or the user cannot
    /// set trusted xattrs (not root).
    fn mark_opaque(dir: &Path) -> bool {
        rustix::fs::lsetxattr(dir, opaque_xattr(), b"y", rustix::fs::XattrFlags::empty()).is_ok()
    }

    #[test]
    fn plain_entries_opaque_folders_and_whiteouts() {
        let tmp = tempfile::tempdir().expect("tmp");
        let file = tmp.path().join("file");
        std::fs::write(&file, b"x").expect("file");
        let meta = |p: &Path| std::fs::symlink_metadata(p).expect("meta");
        assert_eq!(OverlayEntry::of(&file, &meta(&file)), OverlayEntry::Plain);
        let dir = tmp.path().join("dir");
        std::fs::create_dir(&dir).expect("dir");
        assert_eq!(OverlayEntry::of(&dir, &meta(&dir)), OverlayEntry::Plain);
        let whiteout = tmp.path().join("gone");
        let made = rustix::fs::mknodat(
            rustix::fs::CWD,
            &whiteout,
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        );
        // Whiteouts and trusted xattrs need root, as building does; CI runs as root.
        if made.is_err() || !mark_opaque(&dir) {
            assert_ne!(rustix::process::geteuid().as_raw(), 0, "root makes both");
            return;
        }
        assert_eq!(
            OverlayEntry::of(&whiteout, &meta(&whiteout)),
            OverlayEntry::Whiteout
        );
        assert_eq!(OverlayEntry::of(&dir, &meta(&dir)), OverlayEntry::OpaqueDir);
    }

    #[test]
    fn overlays_own_xattrs_are_told_from_content() {
        assert!(is_overlay_xattr("trusted.overlay.opaque"));
        assert!(is_overlay_xattr("user.overlay.redirect"));
        assert!(!is_overlay_xattr("user.mime_type"));
        assert!(is_overlay_xattr(crate::DEVICE_XATTR));
        assert!(!is_overlay_xattr("security.capability"));
        // The mark and the mount option agree on where this process is.
        assert_eq!(
            opaque_xattr().starts_with("user."),
            mount_options_suffix() == ",userxattr"
        );
    }
}
