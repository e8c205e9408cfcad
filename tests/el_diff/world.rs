//! The EL fixture world, made at test time and cached: RPMs built with `rpmbuild` from the spec
//! files in `tests/fixtures/el/specs`, signed with a throwaway GPG key, two repositories made by
//! `createrepo_c` (their metadata signed too), and a stand-in Rocky root: bookworm with Debian's
//! `dnf`, `rpm` and `python3-dnf`, an rpm database in its own `/var/lib/rpm`, and the release
//! files of Rocky 9.5. Not Rocky: everything Rocky's packages go through, on Debian.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::common::{debootstrapped, repo_root, test_cache, ANSIBLE_ROOTFS};

/// What to build: (spec, folder of the served tree, rpmbuild `--define`s).
const BUILDS: &[(&str, &str, &[&str])] = &[
    ("el-base", "el", &[]),
    ("el-shell", "el", &[]),
    ("el-release", "el", &[]),
    ("el-app", "el", &[]),
    ("el-tool", "el", &["tool_version 1.0"]),
    ("el-tool", "el", &["tool_version 2.0"]),
    ("el-conflict", "el", &[]),
    ("el-extra", "el-extra", &[]),
    ("el-stack", "el", &[]),
    ("el-file", "files", &["file_name el-local"]),
    ("el-file", "files", &["file_name el-url"]),
];

/// The repositories `createrepo_c` makes, below the served tree.
const REPOS: &[&str] = &["el", "el-extra"];

/// The public key, at the top of the served tree.
pub const KEY_FILE: &str = "RPM-GPG-KEY-imgbuild-test";

/// The stand-in root's cache name: the Ansible rootfs's packages and Debian's dnf and rpm.
/// A change to what [`standin_root`] writes needs a new name.
const STANDIN: &str = "bookworm-el-standin-2";

/// Rocky 9's `/etc/dnf/dnf.conf` (Debian's says `best=False` and `skip_if_unavailable=True`).
const DNF_CONF: &str =
    "[main]\ngpgcheck=1\ninstallonly_limit=3\nclean_requirements_on_remove=True\n\
best=True\nskip_if_unavailable=False\n";

fn run(command: &mut Command, what: &str) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e} (apt-get install rpm createrepo-c gnupg)"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The fixture repository's groups.
fn comps() -> PathBuf {
    repo_root().join("tests/fixtures/el/comps.xml")
}

/// The `el` repository's module streams.
fn modules_yaml() -> PathBuf {
    repo_root().join("tests/fixtures/el/modules.yaml")
}

/// A digest of the spec files and of what is built from them: the world's cache key.
fn specs_digest(specs: &Path) -> String {
    let mut names: Vec<PathBuf> = std::fs::read_dir(specs)
        .expect("specs")
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    let mut digest = Sha256::new();
    for path in names {
        digest.update(path.file_name().unwrap_or_default().as_encoded_bytes());
        digest.update(std::fs::read(&path).expect("spec"));
    }
    digest.update(std::fs::read(comps()).expect("comps.xml"));
    digest.update(std::fs::read(modules_yaml()).expect("modules.yaml"));
    digest.update(format!("{BUILDS:?}{REPOS:?}"));
    format!("{:x}", digest.finalize())[..16].to_owned()
}

/// Builds every package of [`BUILDS`] into its folder below `out`.
fn build_rpms(specs: &Path, out: &Path, top: &Path) {
    for (spec, folder, defines) in BUILDS {
        let mut command = Command::new("rpmbuild");
        command
            .arg("--define")
            .arg(format!("_topdir {}", top.display()))
            .arg("--define")
            .arg(format!("_rpmdir {}", out.join(folder).display()))
            .arg("--define")
            .arg("_build_name_fmt %{NAME}-%{VERSION}-%{RELEASE}.%{ARCH}.rpm");
        for define in *defines {
            command.arg("--define").arg(define);
        }
        run(
            command.arg("-bb").arg(specs.join(format!("{spec}.spec"))),
            "rpmbuild",
        );
    }
}

/// The served tree of the fixture world (`el/`, `el-extra/`, `files/`, the key), built once
/// per set of spec files and cached.
pub fn world() -> PathBuf {
    let specs = repo_root().join("tests/fixtures/el/specs");
    let cached = test_cache().join(format!("el-world-{}", specs_digest(&specs)));
    if cached.join(KEY_FILE).is_file() {
        return cached;
    }
    let work = test_cache().join(format!("el-world.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let (out, gnupg, top) = (work.join("out"), work.join("gnupg"), work.join("top"));
    std::fs::create_dir_all(&gnupg).expect("gnupg home");
    let gpg = |args: &[&str], what: &str| {
        run(
            Command::new("gpg")
                .arg("--homedir")
                .arg(&gnupg)
                .args(["--batch", "--yes"])
                .args(args),
            what,
        )
    };
    gpg(
        &[
            "--passphrase",
            "",
            "--quick-gen-key",
            "imgbuild test key <test@imgbuild.invalid>",
            "rsa2048",
            "sign",
            "never",
        ],
        "gpg --quick-gen-key",
    );
    build_rpms(&specs, &out, &top);
    let mut rpms: Vec<PathBuf> = Vec::new();
    for folder in ["el", "el-extra", "files"] {
        rpms.extend(
            std::fs::read_dir(out.join(folder))
                .expect("rpms")
                .flatten()
                .map(|e| e.path()),
        );
    }
    run(
        Command::new("rpmsign")
            .env("GNUPGHOME", &gnupg)
            .args([
                "--addsign",
                "--define",
                "_gpg_name imgbuild test key",
                "--define",
                "__gpg /usr/bin/gpg",
            ])
            .args(&rpms),
        "rpmsign",
    );
    for repo in REPOS {
        let mut createrepo = Command::new("createrepo_c");
        createrepo.arg("-q");
        if *repo == "el" {
            createrepo.arg("-g").arg(comps());
        }
        run(createrepo.arg(out.join(repo)), "createrepo_c");
        if *repo == "el" {
            run(
                Command::new("modifyrepo_c")
                    .arg("--mdtype=modules")
                    .arg(modules_yaml())
                    .arg(out.join(repo).join("repodata")),
                "modifyrepo_c",
            );
        }
        let repomd = out.join(repo).join("repodata/repomd.xml");
        gpg(
            &["--detach-sign", "--armor", &repomd.to_string_lossy()],
            "gpg --detach-sign",
        );
    }
    let key = Command::new("gpg")
        .arg("--homedir")
        .arg(&gnupg)
        .args(["--armor", "--export"])
        .output()
        .expect("gpg --export");
    std::fs::write(out.join(KEY_FILE), key.stdout).expect("key");
    let _ = Command::new("gpgconf")
        .arg("--homedir")
        .arg(&gnupg)
        .args(["--kill", "all"])
        .status();
    let _ = std::fs::remove_dir_all(&cached);
    std::fs::rename(&out, &cached).expect("cache the world");
    let _ = std::fs::remove_dir_all(&work);
    cached
}

/// Rocky 9.5's `/etc/os-release`, as the stand-in says it.
const OS_RELEASE: &str = "NAME=\"Rocky Linux\"\nVERSION=\"9.5 (Blue Onyx)\"\nID=\"rocky\"\n\
ID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.5\"\nPLATFORM_ID=\"platform:el9\"\n\
PRETTY_NAME=\"Rocky Linux 9.5 (Blue Onyx)\"\nANSI_COLOR=\"0;32\"\n\
CPE_NAME=\"cpe:/o:rocky:rocky:9::baseos\"\n";

/// The stand-in Rocky root (cached): what both Ansible's fact gathering and imgbuild's see as
/// a Rocky 9.5 host with dnf, with an rpm database in its own `/var/lib/rpm` holding only
/// the stand-in release package, and an empty `/observed`.
pub fn standin_root() -> PathBuf {
    let include = format!("{},dnf,rpm,python3-dnf", ANSIBLE_ROOTFS.1);
    let root = debootstrapped(STANDIN, Some(&include));
    // The release file is written last: with it, the root is ready.
    if root.join("etc/redhat-release").is_file() {
        return root;
    }
    let etc = root.join("etc");
    // Debian's rpm keeps its database in the user's home (`~/.rpmdb`): the image's own instead.
    std::fs::create_dir_all(etc.join("rpm")).expect("/etc/rpm");
    std::fs::write(
        etc.join("rpm/macros.imgbuild-standin"),
        "%_dbpath /var/lib/rpm\n",
    )
    .expect("macros");
    for dir in ["etc/yum.repos.d", "etc/pki/rpm-gpg", "observed"] {
        std::fs::create_dir_all(root.join(dir)).expect(dir);
    }
    std::fs::write(etc.join("dnf/dnf.conf"), DNF_CONF).expect("dnf.conf");
    let _ = std::fs::remove_file(etc.join("os-release"));
    std::fs::write(etc.join("os-release"), OS_RELEASE).expect("os-release");
    run(
        Command::new("chroot").arg(&root).args(["rpm", "--initdb"]),
        "rpm --initdb",
    );
    // What Rocky's rocky-release and bash give the depsolver: releasever, a /bin/sh.
    let spec = repo_root().join("tests/fixtures/el/standin/rocky-standin-release.spec");
    let top = root.join("tmp/standin-build");
    run(
        Command::new("rpmbuild")
            .arg("--define")
            .arg(format!("_topdir {}", top.display()))
            .arg("--define")
            .arg(format!("_rpmdir {}", top.display()))
            .args(["--define", "_build_name_fmt release.rpm", "-bb"])
            .arg(&spec),
        "rpmbuild (stand-in release)",
    );
    run(
        Command::new("chroot").arg(&root).args([
            "rpm",
            "-U",
            "--replacepkgs",
            "--justdb",
            "--nodeps",
            "/tmp/standin-build/release.rpm",
        ]),
        "rpm -U (stand-in release)",
    );
    std::fs::remove_dir_all(&top).expect("clean up the build");
    std::fs::write(
        etc.join("redhat-release"),
        "Rocky Linux release 9.5 (Blue Onyx)\n",
    )
    .expect("redhat-release");
    root
}
