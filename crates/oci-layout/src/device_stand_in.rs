//! Device nodes where they cannot be made: in a user namespace (imgbuild run by an ordinary
//! user) the kernel refuses `mknod` of a character or block device, so a layer's device entry
//! (a debootstrapped base's `/dev/null`, say) is kept as an empty regular file that carries the
//! device in the xattr `user.imgbuild.device` (`c 1 3`), with the node's owner and mode. The
//! layer writer reads it back into the same tar entry root's build writes, so a rootless build
//! gives the same layer bytes; nothing inside a build opens it (the sandbox's `/dev` is its own).

use std::path::Path;

/// The xattr that holds a stand-in's device: kind, major and minor.
pub const DEVICE_XATTR: &str = "user.imgbuild.device";

/// The kind of device a stand-in holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    /// A character device.
    Char,
    /// A block device.
    Block,
}

/// A device node kept as a stand-in file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceStandIn {
    /// Character or block.
    pub kind: DeviceKind,
    /// The device's major number.
    pub major: u32,
    /// The device's minor number.
    pub minor: u32,
}

impl DeviceStandIn {
    /// The xattr's value (`c 1 3`).
    pub fn encode(&self) -> String {
        let kind = match self.kind {
            DeviceKind::Char => 'c',
            DeviceKind::Block => 'b',
        };
        format!("{kind} {} {}", self.major, self.minor)
    }

    /// Reads an xattr's value back; `None` for anything else.
    pub fn decode(value: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(value).ok()?;
        let mut fields = text.split(' ');
        let kind = match fields.next()? {
            "c" => DeviceKind::Char,
            "b" => DeviceKind::Block,
            _ => return None,
        };
        let major = fields.next()?.parse().ok()?;
        let minor = fields.next()?.parse().ok()?;
        fields
            .next()
            .is_none()
            .then_some(Self { kind, major, minor })
    }

    /// The device a regular file at `path` stands in for, if it is a stand-in.
    pub fn of(path: &Path) -> Option<Self> {
        let mut value = [0u8; 32];
        let len = rustix::fs::lgetxattr(path, DEVICE_XATTR, &mut value).ok()?;
        Self::decode(&value[..len])
    }

    /// Makes an empty stand-in file at `path` (which must not exist), with `mode`'s permission
    /// bits.
    pub fn write(&self, path: &Path, mode: u32) -> std::io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode & 0o7777)
            .open(path)?;
        rustix::fs::lsetxattr(
            path,
            DEVICE_XATTR,
            self.encode().as_bytes(),
            rustix::fs::XattrFlags::empty(),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stand_in_reads_back_as_the_device_it_holds() {
        let null = DeviceStandIn {
            kind: DeviceKind::Char,
            major: 1,
            minor: 3,
        };
        assert_eq!(null.encode(), "c 1 3");
        assert_eq!(DeviceStandIn::decode(b"c 1 3"), Some(null));
        assert_eq!(
            DeviceStandIn::decode(b"b 8 0").map(|d| d.kind),
            Some(DeviceKind::Block)
        );
        for bad in [&b"x 1 3"[..], b"c 1", b"c 1 3 4", b"c one 3", b"\xff"] {
            assert_eq!(DeviceStandIn::decode(bad), None, "{bad:?}");
        }
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("null");
        match null.write(&path, 0o666) {
            Ok(()) => assert_eq!(DeviceStandIn::of(&path), Some(null)),
            // A file system without user xattrs (tmpfs before 6.6): nothing to read back.
            Err(e) => assert_eq!(e.raw_os_error(), Some(95), "{e}"),
        }
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"").expect("plain");
        assert_eq!(DeviceStandIn::of(&plain), None);
    }
}
