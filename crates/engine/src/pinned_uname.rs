//! The pinned kernel as the running one: inside the sandbox, `uname` answers with the image's
//! pinned kernel release, so DKMS, vendor installers and scripts that build "for the running
//! kernel" build for the image's kernel, never for the build host's. The shim lives on the
//! sandbox's `/run` tmpfs, first in `PATH`, and never enters a layer. A program that calls
//! `uname(2)` itself, or `/usr/bin/uname` by its full path, still sees the host's release:
//! recipes pass the kernel explicitly there (`--kernel-name`, `KERNEL_VERSION`).

use std::path::Path;

/// The folder of the shim inside the sandbox, put first in `PATH`.
pub use modules::shims::UNAME_SHIM_DIR as SHIM_DIR;

/// The shim: the real `uname`, with the host's release replaced by `pinned` in what it prints.
fn script(pinned: &str) -> String {
    format!(
        r#"#!/bin/sh
# imgbuild: the image's pinned kernel is the running one for every build step.
pinned='{pinned}'
real=/usr/bin/uname
[ -x "$real" ] || real=/bin/uname
host=$("$real" -r) || exit $?
out=$("$real" "$@") || exit $?
printf '%s\n' "$out" | sed "s|$host|$pinned|g"
"#
    )
}

/// Writes the shim under `run` (the sandbox's `/run`, seen from outside the chroot) when a
/// kernel is pinned; returns the `PATH` commands get.
pub fn install(run: &Path, pinned: &str) -> Result<String, String> {
    let base = crate::target::BASE_PATH;
    let safe = !pinned.is_empty()
        && pinned
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-+~".contains(c));
    if !safe {
        return Ok(base.to_owned());
    }
    let dir = run.join(SHIM_DIR.trim_start_matches("/run/"));
    let fail = |e: std::io::Error| format!("writing the uname shim in {}: {e}", dir.display());
    std::fs::create_dir_all(&dir).map_err(fail)?;
    let shim = dir.join("uname");
    std::fs::write(&shim, script(pinned)).map_err(fail)?;
    std::fs::set_permissions(
        &shim,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .map_err(fail)?;
    Ok(format!("{SHIM_DIR}:{base}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shim_answers_with_the_pinned_release() {
        let run = tempfile::tempdir().expect("tempdir");
        let path = install(run.path(), "6.1.0-50-amd64").expect("install");
        assert!(path.starts_with("/run/imgbuild/bin:"));
        let shim = run.path().join("imgbuild/bin/uname");
        let release = std::process::Command::new(&shim)
            .arg("-r")
            .output()
            .expect("run");
        assert_eq!(String::from_utf8_lossy(&release.stdout), "6.1.0-50-amd64\n");
        let all = std::process::Command::new(&shim)
            .arg("-a")
            .output()
            .expect("run");
        let all = String::from_utf8_lossy(&all.stdout).into_owned();
        assert!(
            all.contains(" 6.1.0-50-amd64 ") || all.contains("6.1.0-50-amd64"),
            "{all}"
        );
        let machine = std::process::Command::new(&shim)
            .arg("-m")
            .output()
            .expect("run");
        assert_eq!(
            String::from_utf8_lossy(&machine.stdout).trim(),
            std::env::consts::ARCH
        );
    }

    #[test]
    fn no_pinned_kernel_or_an_odd_one_leaves_uname_alone() {
        let run = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            install(run.path(), "").expect("none"),
            crate::sandbox::BASE_PATH
        );
        assert_eq!(
            install(run.path(), "6.1'; rm -rf /").expect("odd"),
            crate::sandbox::BASE_PATH
        );
        assert!(!run.path().join("imgbuild").exists());
    }
}
