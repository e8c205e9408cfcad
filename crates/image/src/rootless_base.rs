//! debootstrap in a user namespace (imgbuild run by an ordinary user), as mmdebstrap's unshare
//! mode runs it: in a mount and PID namespace of its own with its own `/proc`, told it is in a
//! container (`container=lxc`) so that it binds or skips the device nodes the kernel will not let
//! it make. Its `/dev` is then given the nodes root's debootstrap makes, as stand-ins the layer
//! writer turns back into the same tar entries.

use std::path::Path;
use std::process::Command;

/// The device nodes debootstrap makes (its `setup_devices_simple`): name, kind, major, minor,
/// all mode 0666.
const DEBOOTSTRAP_DEVICES: [(&str, u32, u32); 8] = [
    ("null", 1, 3),
    ("zero", 1, 5),
    ("full", 1, 7),
    ("random", 1, 8),
    ("urandom", 1, 9),
    ("tty", 5, 0),
    ("console", 5, 1),
    ("ptmx", 5, 2),
];

/// The command that runs `program` here: as it is for root, in namespaces of its own (util-linux
/// `unshare`) in a user namespace.
pub fn command(program: &str) -> Command {
    if !oci_layout::in_user_namespace() {
        return Command::new(program);
    }
    let mut command = Command::new("unshare");
    command
        .args([
            "--mount",
            "--pid",
            "--fork",
            "--mount-proc",
            "--propagation",
            "private",
        ])
        .args(["env", "container=lxc", program]);
    command
}

/// In a user namespace, gives the debootstrapped `root`'s `/dev` the nodes root's debootstrap
/// makes, as stand-ins (what is there instead, a file a redirection left or a link, goes).
pub fn devices_as_root_makes_them(root: &Path) -> std::io::Result<()> {
    if !oci_layout::in_user_namespace() {
        return Ok(());
    }
    let dev = root.join("dev");
    for (name, major, minor) in DEBOOTSTRAP_DEVICES {
        let path = dev.join(name);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&path)?,
            Ok(_) => std::fs::remove_file(&path)?,
            Err(_) => {}
        }
        let device = oci_layout::DeviceStandIn {
            kind: oci_layout::DeviceKind::Char,
            major,
            minor,
        };
        device.write(&path, 0o666)?;
        // The umask took bits away.
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666))?;
    }
    Ok(())
}
