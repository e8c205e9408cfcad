//! The packages (issue 54): `scripts/package` (which `scripts/test` runs after
//! `scripts/static-binary`) makes a `.deb` and an `.rpm` of the static binary. Each is installed
//! for real, in an overlay over a cached root (nothing of the cache changes): the `.deb` with
//! `dpkg -i` in a bookworm root that has man-db, the `.rpm` with `rpm -i` in the stand-in Rocky
//! root (its own rpm and rpm database). Each root then runs `imgbuild --version`,
//! `man -w imgbuild` (and shows a page), bash's completion and `imgbuild -C /project plan
//! rocky-9.5-compute` on a copy of this repository's project. Needs root, debootstrap, dnf and rpm (as CI has).

mod common;
#[path = "support/overlay.rs"]
mod overlay;
#[path = "el_diff/world.rs"]
#[allow(dead_code)]
mod world;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use overlay::Side;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A bookworm minbase root with man-db (cached): what `man -w` runs with.
const MAN_ROOTFS: &str = "bookworm-man-db";

/// `dist/<name>`, which `scripts/static-binary` and `scripts/package` write beside this
/// build's target folder.
fn dist(name: &str) -> PathBuf {
    let file = dist_folder().join(name);
    assert!(
        file.is_file(),
        "{} is missing: build it with scripts/static-binary, then scripts/package \
         (scripts/test does)",
        file.display()
    );
    file
}

/// A root to install into: an overlay over `lower` (overlayfs' `lowerdir`, folders joined by
/// `:`), with the package in `/var/tmp` and this repository's project in `/project`.
struct Root {
    _dir: tempfile::TempDir,
    side: Side,
    lower: PathBuf,
}

impl Root {
    fn new(lower: &str, package: &Path) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("imgbuild-package-root-")
            .tempdir_in("/var/tmp")
            .expect("root");
        let side = Side::new(dir.path());
        let stage = side.upper.join("var/tmp");
        std::fs::create_dir_all(&stage).expect("/var/tmp");
        std::fs::copy(package, stage.join(package.file_name().expect("name"))).expect("package");
        let project = side.upper.join("project");
        std::fs::create_dir_all(&project).expect("/project");
        let copied = Command::new("cp")
            .arg("-a")
            .args(["images", "roles", "mirror.toml"].map(|p| repo_root().join(p)))
            .arg(&project)
            .status()
            .expect("cp");
        assert!(copied.success(), "copying the project");
        Self {
            _dir: dir,
            side,
            lower: PathBuf::from(lower),
        }
    }

    /// `script` run by `sh` inside the root (chroot, with proc, sys, dev and a fresh /tmp).
    fn run(&self, script: &str) -> Output {
        let mut command = Command::new("chroot");
        command
            .arg(&self.side.merged)
            .args(["/bin/sh", "-c", script])
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("HOME", "/root")
            .env("LANG", "C.UTF-8");
        self.side.run(&self.lower, true, command)
    }

    /// What the install left at `path` in the root.
    fn installed(&self, path: &str) -> PathBuf {
        self.side.upper.join(path.trim_start_matches('/'))
    }
}

/// `script`'s run, asserted to succeed; its standard output.
fn ok(root: &Root, script: &str) -> String {
    let out = root.run(script);
    assert!(
        out.status.success(),
        "{script}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

/// What every installed package must give its root: the binary (the static one, byte for
/// byte), the man pages, the completions, the docs and the licence; then `imgbuild
/// --version`, `man -w`, `man`, bash's completion and a plan of the project, inside the root.
fn check_installed(root: &Root, zsh_completion: &str, license: &str) {
    let binary = std::fs::read(root.installed("/usr/bin/imgbuild")).expect("/usr/bin/imgbuild");
    let built = std::fs::read(dist("imgbuild")).expect("dist/imgbuild");
    assert!(binary == built, "/usr/bin/imgbuild is not dist/imgbuild");
    for file in [
        "/usr/share/man/man1/imgbuild-build.1.gz",
        "/usr/share/man/man1/imgbuild-cache-prune.1.gz",
        "/usr/share/bash-completion/completions/imgbuild",
        zsh_completion,
        "/usr/share/fish/vendor_completions.d/imgbuild.fish",
        "/usr/share/doc/imgbuild/docs/architecture.md",
        "/usr/share/doc/imgbuild/CHANGELOG.md",
        license,
    ] {
        assert!(root.installed(file).is_file(), "{file} is not installed");
    }
    let text = std::fs::read_to_string(root.installed(license)).expect("licence");
    assert!(text.contains("Apache License"), "{license}: {text}");

    let version = ok(root, "imgbuild --version");
    assert!(
        version.starts_with(&format!("imgbuild {VERSION} (commit ")),
        "{version}"
    );
    let page = ok(root, "man -w imgbuild");
    assert_eq!(page.trim(), "/usr/share/man/man1/imgbuild.1.gz");
    let page = ok(root, "man -w imgbuild-plan");
    assert_eq!(page.trim(), "/usr/share/man/man1/imgbuild-plan.1.gz");
    let shown = ok(root, "man -P cat imgbuild-build");
    assert!(
        shown.contains("--out <DIR>") && shown.contains(&format!("imgbuild {VERSION}")),
        "{shown}"
    );
    let completion = ok(
        root,
        "bash -c '. /usr/share/bash-completion/completions/imgbuild && complete -p imgbuild'",
    );
    assert!(
        completion.trim_end().ends_with("-F _imgbuild imgbuild"),
        "{completion}"
    );
    let plan = ok(root, "imgbuild -C /project plan rocky-9.5-compute");
    assert!(
        plan.starts_with("rocky-9.5-compute: Rocky 9.5, kernel ") && plan.contains(" tasks in "),
        "{plan}"
    );
}

#[test]
fn the_deb_installs_with_dpkg_in_a_bookworm_root_and_runs_there() {
    require_root();
    let deb = dist(&format!("imgbuild_{VERSION}_amd64.deb"));
    let fields = Command::new("dpkg-deb")
        .args(["-f"])
        .arg(&deb)
        .args(["Package", "Architecture", "Depends", "Recommends"])
        .output()
        .expect("dpkg-deb");
    let fields = stdout(&fields);
    assert!(
        fields.contains("Package: imgbuild\nArchitecture: amd64\n") && !fields.contains("Depends"),
        "{fields}"
    );
    for tool in [
        "debootstrap",
        "dnf",
        "qemu-system-x86",
        "ovmf",
        "shim-signed",
        "mtools",
        "dosfstools",
    ] {
        assert!(fields.contains(tool), "Recommends: no {tool}: {fields}");
    }

    let lower = debootstrapped(MAN_ROOTFS, Some("man-db"));
    let root = Root::new(lower.to_str().expect("path"), &deb);
    ok(
        &root,
        &format!("dpkg -i /var/tmp/imgbuild_{VERSION}_amd64.deb"),
    );
    let status = ok(&root, "dpkg-query -W -f '${Status} ${Version}' imgbuild");
    assert_eq!(status, format!("install ok installed {VERSION}"));
    check_installed(
        &root,
        "/usr/share/zsh/vendor-completions/_imgbuild",
        "/usr/share/doc/imgbuild/LICENSE",
    );
}

#[test]
fn the_rpm_installs_with_rpm_in_the_standin_rocky_root_and_runs_there() {
    require_root();
    let rpm = dist(&format!("imgbuild-{VERSION}-1.x86_64.rpm"));
    let query = |what: &str| {
        let out = Command::new("rpm")
            .args(["-qp", what])
            .arg(&rpm)
            .output()
            .expect("rpm");
        assert!(out.status.success(), "rpm -qp {what}: {}", stderr(&out));
        stdout(&out)
    };
    let recommends = query("--recommends");
    for tool in [
        "dnf",
        "qemu-kvm",
        "edk2-ovmf",
        "shim-x64",
        "mtools",
        "dosfstools",
    ] {
        assert!(
            recommends.lines().any(|l| l == tool),
            "Recommends: no {tool}: {recommends}"
        );
    }
    let requires = query("--requires");
    assert!(
        requires.lines().all(|l| l.starts_with("rpmlib(")),
        "a static binary requires nothing: {requires}"
    );

    // The stand-in Rocky root has no man: man-db's root under it gives it one (Rocky's
    // minimal install has man-db), and the stand-in's own files come first.
    let man = debootstrapped(MAN_ROOTFS, Some("man-db"));
    let standin = world::standin_root();
    let lower = format!("{}:{}", standin.display(), man.display());
    let root = Root::new(&lower, &rpm);
    ok(
        &root,
        &format!("rpm -i /var/tmp/imgbuild-{VERSION}-1.x86_64.rpm"),
    );
    let query = ok(&root, "rpm -q imgbuild");
    assert_eq!(query.trim(), format!("imgbuild-{VERSION}-1.x86_64"));
    check_installed(
        &root,
        "/usr/share/zsh/site-functions/_imgbuild",
        "/usr/share/licenses/imgbuild/LICENSE",
    );
}
