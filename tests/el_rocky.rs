//! The Rocky recipes' roles end to end on the fixture EL world (issue 29, part 4): a recipe
//! shaped like rocky-9.5-compute (its create_repos, mofed, nvidia, openibd and dracut roles,
//! unchanged) built on the stand-in Rocky 9.5 root (bookworm with Debian's dnf and rpm: NOT
//! Rocky), the fixture EL repository served on 127.0.0.1 as the site's Rocky mirror. The MOFED
//! stand-in's --add-kernel-support builds kmod RPMs for the pinned kernel with rpmbuild and dnf
//! installs them; verify finds them for the pinned kernel and owned by kmod-mlnx-ofa_kernel in
//! the rpm database, nvidia-peermem built after MOFED, openibd enabled, opensmd disabled, the
//! initramfs built by dracut with Warewulf's module (a stand-in); the image boots (TCG) and
//! loads MOFED's modules. A second build comes from the cache.
//! What truly needs Rocky content is Debian's here (el_standin_content): the kernel and its
//! build tree (Rocky's kernel-core and kernel-devel), the compiler and dracut.
//! Needs root, debootstrap, dnf, rpm, rpmbuild, createrepo-c, gnupg, qemu and the machine's
//! Debian archive, as CI has.

use crate::boot_record;
use crate::common;
#[path = "el_rocky/standin_oci.rs"]
mod standin_oci;
use crate::world;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use boot_record::{boot_record, boot_tcg, booted_once};
use common::*;
use serde_json::Value;

const KERNEL: &str = "6.1.0-50-amd64";
const IMAGE: &str = "rocky-9.5-standin";
/// One port run after run: the mirror's URL is in the layers' cache keys.
const PORT: u16 = 47_829;

struct Setup {
    _work: tempfile::TempDir,
    project: PathBuf,
    out: PathBuf,
    mirror: String,
}

fn sh(script: &str) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(script)
        .status()
        .expect("sh");
    assert!(status.success(), "{script}");
}

/// The site mirror's stand-in: MOFED's and NVIDIA's installer stand-ins, the fixture EL
/// repository as each of Rocky 9's repositories and the site's, its key where the stand-in
/// content role fetches it, and Warewulf's dracut module (a stand-in rpm).
fn mirror(dir: &Path) {
    let installers = repo_root().join("tests/fixtures/installers");
    sh(&format!(
        "bash {}/make-mirror.sh {} >/dev/null",
        installers.display(),
        dir.display()
    ));
    let world = world::world();
    for repo in ["BaseOS", "AppStream", "CRB", "extras"] {
        let os = dir.join(format!("rocky/9.5/{repo}/x86_64"));
        std::fs::create_dir_all(&os).expect("mirror");
        let from = if repo == "BaseOS" { "el" } else { "el-extra" };
        std::os::unix::fs::symlink(world.join(from), os.join("os")).expect("link");
    }
    std::fs::create_dir_all(dir.join("site")).expect("site");
    std::os::unix::fs::symlink(world.join("el-extra"), dir.join("site/el9")).expect("link");
    std::fs::copy(
        world.join(world::KEY_FILE),
        dir.join("rocky/RPM-GPG-KEY-Rocky-9"),
    )
    .expect("key");
    let top = dir.join("warewulf-build");
    let spec = repo_root().join("tests/fixtures/el-rocky/warewulf-dracut-standin.spec");
    sh(&format!(
        "SOURCE_DATE_EPOCH=1700000000 rpmbuild --quiet -bb --define '_topdir {top}' \
         --define '_rpmdir {dest}' --define '_build_name_fmt %{{NAME}}-%{{VERSION}}-%{{RELEASE}}.%{{ARCH}}.rpm' \
         --define 'use_source_date_epoch_as_buildtime 1' --define 'clamp_mtime_to_source_date_epoch 1' \
         --define '_buildhost imgbuild-standin' {spec} \
         && rm -rf {top}",
        top = top.display(),
        dest = dir.join("warewulf/el9").display(),
        spec = spec.display()
    ));
}

fn setup() -> Setup {
    require_root();
    let base = standin_oci::layout(&world::standin_root());
    let work = tempfile::Builder::new()
        .prefix("imgbuild-el-rocky-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let project = work.path().join("project");
    for part in ["images", "roles"] {
        std::fs::create_dir_all(project.join(part)).expect("project");
        sh(&format!(
            "cp -a {}/* {}/ && cp -a {}/* {}/",
            repo_root().join(part).display(),
            project.join(part).display(),
            repo_root()
                .join("tests/fixtures/el-rocky")
                .join(part)
                .display(),
            project.join(part).display()
        ));
    }
    std::fs::copy(repo_root().join("mirror.toml"), project.join("mirror.toml")).expect("mirror");
    std::os::unix::fs::symlink(&base, project.join("standin-base")).expect("base");
    let mirror_dir = work.path().join("mirror");
    mirror(&mirror_dir);
    let mirror = serve_dir_on(&mirror_dir, PORT);
    let out = work.path().join("out");
    Setup {
        _work: work,
        project,
        out,
        mirror,
    }
}

/// `imgbuild --json build` of the image in `formats`, with this test's layer cache.
fn build(s: &Setup, formats: &str) -> Value {
    let out = s.out.to_string_lossy().into_owned();
    let args = [
        "--json", "build", IMAGE, "--mirror", &s.mirror, "--out", &out, "--format", formats,
    ];
    let cache = test_cache().join("el-rocky-cache");
    let result = imgbuild_env(
        &s.project,
        &args,
        &[
            ("IMGBUILD_CACHE", &cache),
            ("IMGBUILD_CACHE_MAX", Path::new("4G")),
            ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
        ],
    );
    built_event(&result)
}

fn run(command: &mut Command) -> String {
    let out = command.output().expect("run");
    assert!(out.status.success(), "{command:?}: {}", stderr(&out));
    stdout(&out)
}

#[test]
fn rocky_shaped_recipe_builds_verifies_and_boots_on_the_stand_in() {
    let s = setup();
    let started = Instant::now();
    let built = build(&s, "oci,chroot");
    let cold = started.elapsed().as_secs_f64();
    verified(&built["verify"]);
    let rootfs = s.out.join(IMAGE).join("rootfs");
    kmods_are_rpms(&rootfs);
    initramfs_by_dracut(&rootfs);
    for layer in built["layers"].as_array().expect("layers") {
        eprintln!(
            "layer {}: {:.1} MB{}",
            layer["role"],
            layer["size"].as_f64().unwrap_or_default() / 1e6,
            if layer["cached"] == true {
                " (cached)"
            } else {
                ""
            }
        );
    }

    let started = Instant::now();
    let again = build(&s, "oci");
    let warm = started.elapsed().as_secs_f64();
    assert_eq!(again["manifest"], built["manifest"]);
    let layers = again["layers"].as_array().expect("layers");
    assert!(layers.iter().all(|l| l["cached"] == true), "{again:#}");
    eprintln!("{IMAGE}: build {cold:.1}s, again {warm:.1}s (all layers cached)");

    let manifest = built["manifest"].as_str().expect("manifest").to_owned();
    boots_and_loads_mofed(&s, &manifest);
}

/// verify passed, with every rule that names what the Rocky roles did.
fn verified(verify: &Value) {
    assert_eq!(verify["ok"], true, "{verify:#}");
    let checks: Vec<(&str, bool)> = verify["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| (c["id"].as_str().unwrap_or_default(), c["ok"] == true))
        .collect();
    for id in [
        "one_kernel",
        "vermagic",
        "modules_dep",
        "mofed_modules",
        "mofed_rpm_owner",
        "ofed_info",
        "nvidia_modules",
        "peermem_after_mofed",
        "openibd_enabled",
        "opensmd_disabled",
        "initramfs",
    ] {
        assert!(checks.contains(&(id, true)), "{id}: {verify:#}");
    }
    let modules = verify["modules"].as_array().expect("modules");
    let mofed = modules
        .iter()
        .filter(|m| {
            m["path"]
                .as_str()
                .is_some_and(|p| p.contains("/extra/mlnx-ofa_kernel/"))
        })
        .count();
    assert_eq!(mofed, 8, "MOFED's 8 modules (with rpcrdma): {modules:#?}");
    for module in modules {
        let vermagic = module["vermagic"].as_str().unwrap_or_default();
        assert!(vermagic.starts_with(&format!("{KERNEL} ")), "{module}");
    }
}

/// rpm names kmod-mlnx-ofa_kernel, built for the pinned kernel, as the owner of MOFED's
/// modules; it requires that kernel; the build's local repository is not left in the image.
fn kmods_are_rpms(rootfs: &Path) {
    let rpm = |args: &[&str]| {
        run(Command::new("rpm")
            .arg("--root")
            .arg(rootfs)
            .args(["--dbpath", "/var/lib/rpm"])
            .args(args))
    };
    let module = format!(
        "/lib/modules/{KERNEL}/extra/mlnx-ofa_kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko"
    );
    let owner = rpm(&["-qf", "--qf", "%{NAME} %{RELEASE}\\n", &module]);
    assert_eq!(
        owner.trim(),
        "kmod-mlnx-ofa_kernel OFED.2.1.8.0.kver.6.1.0_50_amd64",
        "{owner}"
    );
    let requires = rpm(&["-q", "--requires", "kmod-mlnx-ofa_kernel"]);
    assert!(
        requires.contains("kernel-uname-r = 6.1.0-50_amd64"),
        "{requires}"
    );
    let all = rpm(&["-qa", "--qf", "%{NAME}\\n"]);
    for name in [
        "mlnx-ofa_kernel",
        "mlnx-ofa_kernel-devel",
        "ofed-scripts",
        "opensm",
        "warewulf-dracut",
    ] {
        assert!(
            all.lines().any(|l| l == name),
            "{name} not installed: {all}"
        );
    }
    let owner = rpm(&["-qf", "--qf", "%{NAME}\\n", "/usr/bin/ofed_info"]);
    assert_eq!(owner.trim(), "ofed-scripts");
    let tmp: Vec<String> = std::fs::read_dir(rootfs.join("tmp"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(!tmp.iter().any(|n| n.contains("-ext")), "{tmp:?}");
}

/// `/boot/initramfs-K.img` (the EL name), made by dracut with Warewulf's wwinit module.
fn initramfs_by_dracut(rootfs: &Path) {
    let image = format!("/boot/initramfs-{KERNEL}.img");
    assert!(rootfs.join(image.trim_start_matches('/')).is_file());
    assert!(!rootfs.join(format!("boot/initrd.img-{KERNEL}")).exists());
    let listed = run(Command::new("chroot").arg(rootfs).args([
        "lsinitrd",
        &image,
        "-f",
        "etc/wwinit-standin",
    ]));
    assert!(listed.contains("Warewulf's wwinit"), "{listed}");
}

/// `imgbuild boot` under TCG (once per image and boot code): the pinned kernel runs and MOFED's
/// modules, from the kmod RPMs, load; openibd runs.
fn boots_and_loads_mofed(s: &Setup, manifest: &str) {
    let record = boot_record("el-rocky-boots", manifest);
    let report = booted_once(&record, IMAGE, || {
        boot_tcg(&s.project, &s.out.join(IMAGE), IMAGE)
    });
    assert_eq!(report["findings"]["kernel"], KERNEL, "{report:#}");
    for name in ["mlx_compat", "ib_core", "mlx5_core", "mlx5_ib", "ib_ipoib"] {
        let module = report["findings"]["modules"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["name"] == name))
            .unwrap_or_else(|| panic!("{name} was not loaded: {report:#}"));
        assert_eq!(module["outcome"], "loaded", "{report:#}");
    }
    assert_eq!(report["findings"]["openibd"][1], "active", "{report:#}");
    assert_eq!(report["ok"], true, "{report:#}");
}
