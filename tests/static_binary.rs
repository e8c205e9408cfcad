//! The static binary (issue 54): `scripts/static-binary` (which `.ci/run` runs) builds imgbuild
//! for x86_64 with musl, with no dynamic dependency, stripped to at most 25 MB. Proof that it runs
//! on whatever Linux a site has: inside a root that has no glibc and no Debian tool, only
//! busybox-static (as a minimal EL 8 host's userland stands in for here), it says its version
//! and commit, builds an image from a registry base on 127.0.0.1 into a docker-archive, and
//! verifies it. Needs root, busybox-static, skopeo and docker-registry.

mod common;
#[path = "support/framed_base.rs"]
mod framed_base;
mod registry_server;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use framed_base::*;

/// The static binary `scripts/static-binary` wrote beside this build's target folder.
fn static_binary() -> PathBuf {
    let binary = dist_folder().join("imgbuild");
    assert!(
        binary.is_file(),
        "{} is missing: build it with scripts/static-binary (.ci/run does)",
        binary.display()
    );
    binary
}

/// Whether the ELF file `bytes` asks for an interpreter (a dynamic loader): a `PT_INTERP`
/// program header.
fn asks_for_a_loader(bytes: &[u8]) -> bool {
    let word = |at: usize, len: usize| {
        bytes[at..at + len]
            .iter()
            .rev()
            .fold(0u64, |n, b| n << 8 | u64::from(*b))
    };
    assert_eq!(&bytes[..4], b"\x7fELF", "an ELF file");
    let (offset, size, count) = (word(0x20, 8), word(0x36, 2), word(0x38, 2));
    (0..count).any(|i| word((offset + i * size) as usize, 4) == 3)
}

/// `args` run by the binary inside `root` (a private mount namespace where the root is a mount
/// of its own, as a host's `/` is, with /proc, /dev and a tmpfs /tmp), with
/// `IMGBUILD_CACHE=/cache`.
fn inside(root: &Path, args: &[&str]) -> Output {
    let script = format!(
        "mount --bind {root} {root} && mount -t proc proc {root}/proc && \
         mount --rbind /dev {root}/dev && mount -t tmpfs tmpfs {root}/tmp && \
         exec chroot {root} /usr/bin/imgbuild \"$@\"",
        root = root.display()
    );
    Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
            "sh",
        ])
        .args(args)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("IMGBUILD_CACHE", "/cache")
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("unshare (util-linux)")
}

/// A root holding busybox-static (`/bin/sh` and the rest) and the static binary only.
fn busybox_root(binary: &Path) -> tempfile::TempDir {
    let root = tempfile::Builder::new()
        .prefix("imgbuild-busybox-root-")
        .tempdir_in("/var/tmp")
        .expect("root");
    for dir in ["bin", "usr/bin", "proc", "dev", "tmp", "etc", "cache"] {
        std::fs::create_dir_all(root.path().join(dir)).expect("folder");
    }
    std::fs::copy("/bin/busybox", root.path().join("bin/busybox"))
        .expect("busybox-static (CI installs it)");
    for applet in ["sh", "ls", "cat"] {
        std::os::unix::fs::symlink("busybox", root.path().join("bin").join(applet)).expect("link");
    }
    std::fs::copy(binary, root.path().join("usr/bin/imgbuild")).expect("the binary");
    root
}

#[test]
fn the_static_binary_builds_and_verifies_an_image_in_a_root_without_glibc() {
    require_root();
    let binary = static_binary();
    let bytes = std::fs::read(&binary).expect("binary");
    assert!(!asks_for_a_loader(&bytes), "no dynamic loader, no glibc");
    assert!(
        bytes.len() <= 25 << 20,
        "{} bytes: at most 25 MB",
        bytes.len()
    );
    assert!(
        binary.with_extension("debug").is_file(),
        "its debug information beside it"
    );
    let root = busybox_root(&binary);
    let root = root.path();
    assert!(
        !root.join("lib").exists() && !root.join("usr/lib").exists(),
        "no libraries"
    );

    let version = inside(root, &["--version"]);
    assert!(version.status.success(), "{}", stderr(&version));
    assert!(
        stdout(&version).contains("(commit "),
        "{}",
        stdout(&version)
    );

    // A registry base on 127.0.0.1, built into a docker-archive, then verified.
    let registry = registry_server::start_registry(false);
    let staging = tempfile::tempdir().expect("staging");
    let base = staging.path().join("base");
    let tar = base_tar();
    let blob = through("gzip", &["-c", "-n"], &tar);
    let media = "application/vnd.oci.image.layer.v1.tar+gzip";
    layout(
        &base,
        &blob,
        media,
        &sha256(&tar),
        (&sha256(&blob), blob.len()),
    );
    let reference = format!("{}/site/framed:static", registry.host);
    let pushed = Command::new("skopeo")
        .args(["copy", "-q", "--dest-tls-verify=false"])
        .arg(format!("oci:{}", base.display()))
        .arg(format!("docker://{reference}"))
        .output()
        .expect("skopeo (CI installs it)");
    assert!(pushed.status.success(), "{}", stderr(&pushed));
    let p = project_from(&format!(
        "bootstrap: docker\n    build_from: \"{reference}\""
    ));
    let copied = Command::new("cp")
        .arg("-a")
        .arg(&p.project)
        .arg(root.join("project"))
        .status()
        .expect("cp");
    assert!(copied.success());
    let args = [
        "-C",
        "/project",
        "build",
        "framed",
        "--no-verify",
        "--format",
        "docker-archive",
        "--out",
        "/out",
    ];
    let built = inside(root, &args);
    assert!(built.status.success(), "{}", stderr(&built));
    assert!(
        root.join("out/framed/framed.tar").is_file(),
        "the docker-archive"
    );

    // verify reads it and judges it (this tiny image has no kernel: its checks say so).
    let verified = inside(root, &["verify", "/out/framed/framed.tar"]);
    let said = stdout(&verified);
    assert!(
        matches!(verified.status.code(), Some(0 | 1)),
        "{said}{}",
        stderr(&verified)
    );
    assert!(said.contains("verify: "), "{said}");
}
