//! The mission end to end (issue: end to end): debian-12-compute built from the project's own
//! recipe and roles, MOFED and NVIDIA modules compiled with kbuild for the pinned kernel (not
//! the build host's) by the fixture installers served from a loopback mirror, verified, and
//! read back the way Warewulf imports it. Then the mistakes verify must catch.
//! Needs root, debootstrap, skopeo and umoci, and the machine's Debian archive, as CI has.

mod common;
#[path = "support/layer_trees.rs"]
mod layer_trees;
#[path = "e2e_debian/verify_forms.rs"]
mod verify_forms;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::*;
use layer_trees::{layers_holding, roles_whose_layer_holds, LayerFile};
use serde_json::Value;

const KERNEL: &str = "6.1.0-50-amd64";

struct Setup {
    _work: tempfile::TempDir,
    project: PathBuf,
    out: PathBuf,
    cache: PathBuf,
    mirror: String,
}

fn setup() -> Setup {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-e2e-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let project = work.path().join("project");
    std::fs::create_dir_all(&project).expect("project");
    for part in ["images", "roles", "mirror.toml"] {
        let status = Command::new("cp")
            .arg("-a")
            .arg(repo_root().join(part))
            .arg(&project)
            .status()
            .expect("cp");
        assert!(status.success());
    }
    for part in ["images", "roles"] {
        let status = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "cp -a {}/* {}/",
                repo_root().join("tests/fixtures/e2e").join(part).display(),
                project.join(part).display()
            ))
            .status()
            .expect("cp");
        assert!(status.success());
    }
    let mirror_dir = work.path().join("mirror");
    let status = Command::new("bash")
        .arg(repo_root().join("tests/fixtures/installers/make-mirror.sh"))
        .arg(&mirror_dir)
        .status()
        .expect("make-mirror");
    assert!(status.success());
    // One port run after run: the mofed and nvidia layers (a DKMS compile) stay cached.
    // e2e_project's UNSIGNED_PORT: e2e_doca builds on these layers.
    let mirror = serve_dir_on(&mirror_dir, 47_811);
    // Layers are shared between runs on one machine; a fresh CI machine builds everything.
    let cache = test_cache().join("e2e-cache");
    std::fs::create_dir_all(&cache).expect("cache");
    let out = work.path().join("out");
    Setup {
        _work: work,
        project,
        out,
        cache,
        mirror,
    }
}

fn build(s: &Setup, image: &str, extra: &[&str]) -> (std::process::Output, Option<Value>) {
    let out = s.out.to_string_lossy().into_owned();
    let mut args = vec![
        "--json", "build", image, "--mirror", &s.mirror, "--out", &out,
    ];
    args.extend_from_slice(extra);
    let result = imgbuild_env(
        &s.project,
        &args,
        &[
            ("IMGBUILD_CACHE", &s.cache),
            // The e2e images' layers (debian-12-compute, its open and signed variants, softroce,
            // the DOCA images) and room for one changed stack.
            ("IMGBUILD_CACHE_MAX", Path::new("12G")),
            ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
        ],
    );
    let built = stdout(&result)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "built");
    (result, built)
}

/// Says how long the phase that ends here took (seen with `--nocapture`), and starts the next.
fn lap(phase: &mut Instant, name: &str) {
    eprintln!(
        "e2e phase: {name} took {:.0} s",
        phase.elapsed().as_secs_f64()
    );
    *phase = Instant::now();
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn debian_12_compute_builds_verifies_and_imports_and_verify_catches_the_classic_mistakes() {
    let s = setup();
    let host_kernel = run(Command::new("uname").arg("-r"));
    assert_ne!(
        host_kernel.trim(),
        KERNEL,
        "the pinned kernel must differ from the build host's for this test to mean anything"
    );

    let mut phase = Instant::now();
    let started = Instant::now();
    let (result, built) = build(&s, "debian-12-compute", &[]);
    let first_seconds = started.elapsed().as_secs_f64();
    assert!(result.status.success(), "build failed: {}", stderr(&result));
    let built = built.expect("a built event");
    let verify = &built["verify"];
    assert_eq!(verify["ok"], true, "{verify:#}");
    // One initramfs per image: the kernel's, NVIDIA's and dracut's installation hooks deferred
    // theirs; the dracut role's own build is the only one in any layer. The kernel's deferred
    // create left the file empty with mkinitramfs's mode, and dracut built into it, keeping
    // that mode as it does over the kernel's real initramfs under Ansible.
    let initrd = format!("boot/initrd.img-{KERNEL}");
    assert_eq!(
        roles_whose_layer_holds(&s.cache, &built, &initrd),
        ["dracut"]
    );
    let holding = layers_holding(&s.cache, &built, &initrd);
    let placeholder = LayerFile {
        role: "kernel".into(),
        size: 0,
        mode: 0o644,
    };
    assert_eq!(holding.first(), Some(&placeholder), "{holding:?}");
    assert_eq!(holding.last().map(|f| f.mode), Some(0o644), "{holding:?}");

    // Every module in the image is built for the pinned kernel, none for the host's: MOFED's
    // (the stand-in's, compiled with kbuild) and NVIDIA's real 535 driver, built by DKMS.
    let modules = verify["modules"].as_array().expect("modules");
    let ours: Vec<&Value> = modules
        .iter()
        .filter(|m| {
            m["path"].as_str().is_some_and(|p| {
                p.contains("/extra/mlnx-ofa_kernel/") || p.contains("/updates/dkms/nvidia-current")
            })
        })
        .collect();
    assert_eq!(
        ours.len(),
        13,
        "8 MOFED modules (with rpcrdma) and 5 NVIDIA modules (nvidia-current, -modeset, -drm, -uvm, -peermem): {ours:#?}"
    );
    for module in modules {
        let vermagic = module["vermagic"].as_str().unwrap_or_default();
        assert!(
            vermagic.starts_with(&format!("{KERNEL} ")),
            "{} has vermagic {vermagic}",
            module["path"]
        );
    }
    let peermem = modules
        .iter()
        .find(|m| {
            m["path"]
                .as_str()
                .is_some_and(|p| p.ends_with("/updates/dkms/nvidia-current-peermem.ko"))
        })
        .expect("nvidia-peermem");
    assert!(
        peermem["depends"]
            .as_array()
            .expect("depends")
            .iter()
            .any(|d| d == "ib_core"),
        "{peermem}"
    );
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
        "ofed_info",
        "nvidia_modules",
        "peermem_after_mofed",
        "openibd_enabled",
        "opensmd_disabled",
        "nvidia_version",
        "nvidia_versions_match",
        "duplicate_modules",
        "no_private_keys",
        "initramfs",
        "bin_sh",
        "no_build_tools",
    ] {
        assert!(
            checks.contains(&(id, true)),
            "check {id} missing or failed: {checks:?}"
        );
    }

    let version = verify["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["id"] == "nvidia_version")
        .map(|c| c["detail"].to_string())
        .unwrap_or_default();
    assert!(version.contains("is driver 535.261.03"), "{version}");

    // The report next to the outputs.
    let dir = s.out.join("debian-12-compute");
    let report: Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).expect("report.json"))
            .expect("report JSON");
    assert_eq!(report["kernel"], KERNEL);
    assert_eq!(report["mofed"], "24.10-2.1.8.0");
    let kernel_layer = report["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .find(|l| l["role"] == "kernel")
        .expect("kernel layer");
    assert!(
        kernel_layer["packages_added"]
            .to_string()
            .contains(&format!("linux-image-{KERNEL}")),
        "{kernel_layer}"
    );
    assert!(std::fs::read_to_string(dir.join("report.md"))
        .expect("report.md")
        .contains("verify passed"));
    lap(&mut phase, "build");

    // Warewulf's import path: containers/image copies the docker-archive, umoci unpacks it.
    let archive = dir.join("debian-12-compute.tar");
    let oci = s.out.join("imported");
    run(Command::new("skopeo")
        .args(["copy", "-q"])
        .arg(format!("docker-archive:{}", archive.display()))
        .arg(format!("oci:{}:x", oci.display())));
    let bundle = s.out.join("bundle");
    run(Command::new("umoci")
        .args(["unpack", "--image"])
        .arg(format!("{}:x", oci.display()))
        .arg(&bundle));
    std::fs::remove_dir_all(&oci).expect("the imported copy is unpacked: remove it");
    lap(&mut phase, "import with skopeo and umoci");
    let rootfs = bundle.join("rootfs");
    assert!(rootfs.join("bin/sh").exists());
    let kernels: Vec<String> = std::fs::read_dir(rootfs.join("boot"))
        .expect("boot")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.starts_with("vmlinuz-"))
        .collect();
    assert_eq!(kernels, vec![format!("vmlinuz-{KERNEL}")]);
    assert!(rootfs.join(format!("boot/initrd.img-{KERNEL}")).is_file());
    let wants = rootfs.join("etc/systemd/system/multi-user.target.wants");
    assert!(wants.join("openibd.service").is_symlink());
    assert!(!wants.join("opensmd.service").exists());
    // Nothing built for the host's kernel.
    assert!(!rootfs.join("lib/modules").join(host_kernel.trim()).exists());
    // The build-only packages are gone (the recipe's build_only_packages), the modules they
    // built are not, and the package database is whole.
    build_only_packages_are_gone(&report, &rootfs);
    packages_stay_out_of_the_image(&s, &rootfs);
    // The SBOM beside the outputs lists what dpkg-query and modinfo find in the image.
    let missing = sbom_misses(&rootfs, &dir.join("sbom.cdx.json"));
    assert!(missing.is_empty(), "not in the SBOM: {missing:?}");
    lap(&mut phase, "checks of the imported rootfs");
    // imgbuild verify reads the archive itself, and every other form a site has, judging
    // each by what it finds; then each classic fault, with no flag naming what to expect.
    let alone = verify_forms::every_form_passes(&s.project, &archive, &rootfs, &s.out, KERNEL);
    // The build's verify read the layers' folders in the layer cache, not the image: it found
    // every module the archive holds, each as the archive's own reading describes it.
    assert_eq!(alone["modules"], verify["modules"]);
    lap(&mut phase, "verify of every form");
    verify_forms::each_fault_fails_by_the_image_alone(&s.project, &rootfs, KERNEL);
    lap(&mut phase, "verify of each fault");

    // A second build with no change is served from the cache, to the same digest. --boot then
    // boots it as Warewulf boots a node (the image as its initramfs, under TCG here), with an
    // overlay giving munge its key as Warewulf's overlays give a node: the pinned kernel runs,
    // MOFED's modules load, NVIDIA's find no device on a VM, openibd and munge run.
    let overlay = munge_key_overlay(&s, &rootfs);
    let started = Instant::now();
    let (again, rebuilt) = build(
        &s,
        "debian-12-compute",
        &["--boot", "--boot-overlay", &overlay.to_string_lossy()],
    );
    let second_seconds = started.elapsed().as_secs_f64();
    assert!(again.status.success(), "{}", stderr(&again));
    let booted = stdout(&again)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "boot")
        .expect("a boot event");
    boots_and_loads_its_modules(&booted, &dir);
    let rebuilt = rebuilt.expect("built");
    assert_eq!(rebuilt["manifest"], built["manifest"]);
    assert!(
        rebuilt["layers"]
            .as_array()
            .expect("layers")
            .iter()
            .all(|l| l["cached"] == true),
        "{rebuilt:#}"
    );
    eprintln!(
        "debian-12-compute: first build {first_seconds:.1}s, second build and boot {second_seconds:.1}s"
    );
    lap(&mut phase, "second build, booted");

    // nvidia before mofed (the lint bypassed): peermem is built without MOFED's API.
    let (bad, _) = build(&s, "bad-order", &["--no-lint"]);
    assert_eq!(bad.status.code(), Some(1), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("peermem_after_mofed"),
        "{}",
        stderr(&bad)
    );
    assert!(
        !s.out.join("bad-order/bad-order.tar").exists(),
        "a failed verify writes no output"
    );
    let (linted, _) = build(&s, "bad-order", &[]);
    assert_eq!(
        linted.status.code(),
        Some(2),
        "the lint refuses it at plan time: {}",
        stderr(&linted)
    );
    lap(&mut phase, "bad-order");

    // A module built for another kernel is named.
    let (stray, _) = build(&s, "stray-module", &[]);
    assert_eq!(stray.status.code(), Some(1));
    assert!(
        stderr(&stray).contains(&format!(
            "/lib/modules/{KERNEL}/extra/stray.ko is built for 6.1.0-99-amd64"
        )),
        "{}",
        stderr(&stray)
    );
    lap(&mut phase, "stray-module verified");

    // Written anyway (--no-verify) and booted: the kernel refuses the module, and the boot
    // names it with the kernel's reason.
    let (written, _) = build(&s, "stray-module", &["--no-verify", "--format", "oci"]);
    assert!(written.status.success(), "{}", stderr(&written));
    lap(&mut phase, "stray-module written");
    boot_names_the_module_the_kernel_refuses(&s, &s.out.join("stray-module"));
    lap(&mut phase, "stray-module boot");

    // Modules of another kernel's release fail the one-kernel check.
    let (second_kernel, _) = build(&s, "stray-kernel-dir", &[]);
    assert_eq!(second_kernel.status.code(), Some(1));
    assert!(
        stderr(&second_kernel).contains("one_kernel")
            && stderr(&second_kernel).contains("6.1.0-99-amd64"),
        "{}",
        stderr(&second_kernel)
    );
    lap(&mut phase, "stray-kernel-dir");

    // A node without an HCA: SoftRoCE on the VM's card with Debian's own RDMA stack. Booted,
    // it moves data over RDMA.
    softroce_moves_data_over_rdma(&s);
    lap(&mut phase, "softroce, built and booted");
}

/// `build debian-12-softroce --boot`: the probe finds the image's rxe device on the VM's card,
/// its port active, and an `ib_write_bw` loopback moves data.
fn softroce_moves_data_over_rdma(s: &Setup) {
    let (result, built) = build(s, "debian-12-softroce", &["--format", "oci", "--boot"]);
    // No role builds an initramfs here: the kernel's hook deferred its build, and the image's
    // one initramfs is built by that hook at the end of the last role.
    let built = built.unwrap_or_else(|| panic!("no built event: {}", stderr(&result)));
    let last = built["layers"]
        .as_array()
        .and_then(|l| l.last())
        .and_then(|l| l["role"].as_str())
        .expect("a last layer");
    assert_eq!(
        roles_whose_layer_holds(&s.cache, &built, &format!("boot/initrd.img-{KERNEL}")),
        [last],
        "{built:#}"
    );
    let booted = stdout(&result)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "boot")
        .unwrap_or_else(|| panic!("no boot event: {}", stderr(&result)));
    assert!(result.status.success(), "{booted:#}\n{}", stderr(&result));
    let rdma = &booted["findings"]["rdma"];
    assert_eq!(
        rdma["device"], "rxe0",
        "the image's own softroce unit made it: {booted:#}"
    );
    assert_eq!(rdma["port_state"], "PORT_ACTIVE", "{booted:#}");
    let moved = rdma["write_mb_per_s"].as_f64().unwrap_or_default();
    assert!(moved > 0.0, "{booted:#}");
    assert_eq!(check_in(&booted, "rdma_loopback")["ok"], true);
    eprintln!(
        "softroce: ib_write_bw loopback over rxe0 in the VM: {:.3} GB/s ({})",
        moved * 1_048_576.0 / 1e9,
        booted["accel"]
    );
}

/// The compiler, the kernel headers and DKMS left with the last step; the NVIDIA modules DKMS
/// built stayed, with every other module; apt finds no broken dependency.
/// What apt downloaded is in the shared package cache (for the next build), not in the image:
/// neither the base's packages nor the roles'.
fn packages_stay_out_of_the_image(s: &Setup, rootfs: &Path) {
    let names = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".deb"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let in_image = names(&rootfs.join("var/cache/apt/archives"));
    assert!(in_image.is_empty(), "packages in the image: {in_image:?}");
    let pool = names(&s.cache.join("packages/apt"));
    assert!(
        pool.iter().any(|n| n.starts_with("nvidia-kernel-dkms_")),
        "the package cache lacks the driver: {pool:?}"
    );
}

fn build_only_packages_are_gone(report: &Value, rootfs: &Path) {
    let removal = &report["build_only"];
    let removed: Vec<&str> = removal["removed"]
        .as_array()
        .expect("the report's build_only.removed")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for package in [
        "gcc-12",
        "dkms",
        "nvidia-kernel-dkms",
        "linux-headers-6.1.0-50-amd64",
    ] {
        assert!(removed.contains(&package), "{package} not in {removed:?}");
    }
    for package in ["firmware-nvidia-gsp", "nvidia-kernel-support", "libcuda1"] {
        assert!(!removed.contains(&package), "{package} was removed");
    }
    let (before, after) = (
        removal["bytes_before"].as_u64().expect("bytes_before"),
        removal["bytes_after"].as_u64().expect("bytes_after"),
    );
    assert!(after + 200_000_000 < before, "{removal}");
    // DKMS's five NVIDIA modules and MOFED's eight stay where they were: DKMS was told to
    // forget it installed them, so its removal left them, and nothing had to be put back.
    assert_eq!(
        removal["modules_kept"].as_array().map(Vec::len),
        Some(13),
        "{removal}"
    );
    assert_eq!(
        removal["modules_restored"],
        serde_json::json!([]),
        "{removal}"
    );
    let layer = report["layers"]
        .as_array()
        .and_then(|l| l.last())
        .expect("the last layer");
    assert_eq!(layer["role"], "build-only-removal");
    assert!(
        layer["size"].as_u64().is_some_and(|s| s < 20_000_000),
        "a layer of removals, not of copies: {layer}"
    );
    eprintln!(
        "build-only packages: {} removed, unpacked {:.1} MB -> {:.1} MB ({:.2} of before)",
        removed.len(),
        before as f64 / 1e6,
        after as f64 / 1e6,
        after as f64 / before as f64
    );
    for gone in [
        "usr/bin/gcc-12",
        "usr/sbin/dkms",
        "usr/src/linux-headers-6.1.0-50-amd64",
        "var/lib/dkms",
    ] {
        assert!(!rootfs.join(gone).exists(), "{gone} is still there");
    }
    for kept in [
        "nvidia-current.ko",
        "nvidia-current-peermem.ko",
        "nvidia-current-uvm.ko",
    ] {
        let path = rootfs.join(format!("lib/modules/{KERNEL}/updates/dkms/{kept}"));
        assert!(path.is_file(), "{} is missing", path.display());
    }
    assert!(rootfs.join("lib/firmware/nvidia").is_dir());
    let modules_dep =
        std::fs::read_to_string(rootfs.join(format!("lib/modules/{KERNEL}/modules.dep")))
            .expect("modules.dep");
    assert!(modules_dep.contains("updates/dkms/nvidia-current-peermem.ko:"));
    run(Command::new("chroot")
        .arg(rootfs)
        .args(["apt-get", "check", "-q"]));
}

/// `imgbuild --json boot DIR` under TCG: its exit code and report.
fn boot(s: &Setup, dir: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let dir_arg = dir.to_string_lossy().into_owned();
    let mut args = vec![
        "--json",
        "boot",
        &dir_arg,
        "--accel",
        "tcg",
        "--timeout",
        "600",
    ];
    args.extend_from_slice(extra);
    let out = imgbuild_env(&s.project, &args, &[]);
    let report: Value = serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("boot: {e}: {}", stderr(&out)));
    (out.status.code(), report)
}

/// What the probe said of module `name`.
fn module_in<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["findings"]["modules"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["name"] == name))
        .unwrap_or_else(|| panic!("{name} was not loaded: {report:#}"))
}

fn boots_and_loads_its_modules(report: &Value, dir: &Path) {
    assert_eq!(report["ok"], true, "{report:#}");
    assert_eq!(report["findings"]["kernel"], KERNEL);
    let outcome = |name: &str| module_in(report, name)["outcome"].clone();
    for mofed in ["mlx_compat", "ib_core", "mlx5_core", "mlx5_ib", "ib_ipoib"] {
        assert_eq!(outcome(mofed), "loaded", "{report:#}");
    }
    for nvidia in ["nvidia-current", "nvidia-current-peermem"] {
        assert_eq!(outcome(nvidia), "no_device", "{report:#}");
    }
    assert_eq!(report["findings"]["openibd"][1], "active", "{report:#}");
    assert!(dir.join("boot-console.log").is_file());
    // The recipe's boot_expect_failed still names munge, but with its key in the overlay munge
    // starts, and no unit fails that the recipe does not expect to.
    assert_eq!(
        report["expect_failed"],
        serde_json::json!(["munge.service", "sssd-*.socket"])
    );
    assert_eq!(report["overlays"].as_array().map(Vec::len), Some(1));
    let failed = report["findings"]["failed_units"].to_string();
    assert!(!failed.contains("munge.service"), "{report:#}");
    assert_eq!(check_in(report, "units_started")["ok"], true, "{report:#}");
    // The boot is in the build's report.
    let build_report: Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).expect("report.json"))
            .expect("JSON");
    assert_eq!(build_report["boot"]["ok"], true);
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("#### boot: passed in"), "{md}");
    assert!(md.contains("| mlx5_core | loaded |"), "{md}");
}

fn check_in<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == id))
        .unwrap_or_else(|| panic!("no check {id}: {report:#}"))
}

/// A folder laid over the image at boot (`--boot-overlay`), as Warewulf sends a node's overlays:
/// munge's key, owned by the image's munge user.
fn munge_key_overlay(s: &Setup, rootfs: &Path) -> PathBuf {
    let passwd = std::fs::read_to_string(rootfs.join("etc/passwd")).expect("passwd");
    let munge: Vec<u32> = passwd
        .lines()
        .find(|l| l.starts_with("munge:"))
        .expect("a munge user")
        .split(':')
        .skip(2)
        .take(2)
        .map(|n| n.parse().expect("id"))
        .collect();
    let overlay = s.out.join("overlay");
    let key_dir = overlay.join("etc/munge");
    std::fs::create_dir_all(&key_dir).expect("overlay");
    std::fs::write(key_dir.join("munge.key"), [7u8; 1024]).expect("key");
    use std::os::unix::fs::PermissionsExt;
    for (path, mode) in [(overlay.join("etc"), 0o755), (key_dir.clone(), 0o700)] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }
    let key = key_dir.join("munge.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400)).expect("chmod");
    for path in [&key_dir, &key] {
        std::os::unix::fs::chown(path, Some(munge[0]), Some(munge[1])).expect("chown");
    }
    overlay
}

/// The small stray-module image booted with `imgbuild boot DIR`: the kernel refuses the module
/// and the boot names it; munge, with no key and no overlay, fails as its recipe expects.
fn boot_names_the_module_the_kernel_refuses(s: &Setup, dir: &Path) {
    let (code, report) = boot(s, dir, &[]);
    assert_eq!(code, Some(1), "{report:#}");
    let stray = module_in(&report, "stray");
    // The copy's vermagic edit also breaks Debian's signature on it: the kernel says "Key was
    // rejected by service" before it reads the vermagic (a broken signature is refused with or
    // without Secure Boot), which the boot reports as refused for its signature; a kernel that
    // read the vermagic first would refuse it as failed. Either way it is refused, and named.
    assert!(
        stray["outcome"] == "rejected" || stray["outcome"] == "failed",
        "{report:#}"
    );
    assert!(
        stray["message"]
            .as_str()
            .is_some_and(|m| m.contains("could not insert 'stray'")),
        "{report:#}"
    );
    assert_eq!(report["findings"]["kernel"], KERNEL);
    assert_eq!(
        report["expect_failed"],
        serde_json::json!(["munge.service"])
    );
    let failed = report["findings"]["failed_units"].to_string();
    assert!(failed.contains("munge.service"), "{report:#}");
    let units = check_in(&report, "units_started");
    assert_eq!(units["ok"], true, "{report:#}");
    assert!(
        units["detail"]
            .as_str()
            .is_some_and(|d| d.contains("munge.service") && d.contains("expects to fail")),
        "{units}"
    );
}
