//! verify with only the image as input: the built image in every form a site has it (a rootfs
//! folder, a Warewulf chroot, the `.img.gz` Warewulf provisions, an oci-archive, the
//! docker-archive), then the faults a site's own pipeline makes, each put into a copy of the
//! real image (real kbuild modules) and judged with no flag naming what to expect.

use std::path::Path;
use std::process::Command;

use super::common::*;
use serde_json::Value;

/// `imgbuild --json verify <input> [flags]`: its exit code and report.
fn verify(project: &Path, input: &str, flags: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec!["--json", "verify", input];
    args.extend_from_slice(flags);
    let out = imgbuild(project, &args);
    let report = serde_json::from_str(stdout(&out).trim()).unwrap_or_else(|e| {
        panic!(
            "verify {input}: no JSON report ({e}): {}{}",
            stdout(&out),
            stderr(&out)
        )
    });
    (out.status.code(), report)
}

fn failed(report: &Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["ok"] == false)
        .filter_map(|c| c["id"].as_str().map(str::to_owned))
        .collect()
}

fn detail(report: &Value, id: &str) -> String {
    report["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["id"] == id)
        .map(|c| c["detail"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

fn sh(script: &str) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(script)
        .status()
        .expect("sh");
    assert!(status.success(), "{script}");
}

/// Every form of the image passes, with the MOFED and NVIDIA checks run because verify found
/// them, not because a flag asked. Returns the docker-archive's report.
pub fn every_form_passes(
    project: &Path,
    archive: &Path,
    rootfs: &Path,
    work: &Path,
    kernel: &str,
) -> Value {
    let chroot = work.join("chroots/compute");
    std::fs::create_dir_all(&chroot).expect("chroots");
    std::os::unix::fs::symlink(rootfs, chroot.join("rootfs")).expect("chroot link");
    let img = work.join("compute.img.gz");
    // Packed as wwctl image build packs it: a newc cpio, compressed.
    sh(&format!(
        "cd '{}' && find . | cpio --quiet -o -H newc | gzip -1 > '{}'",
        rootfs.display(),
        img.display()
    ));
    let oci_archive = work.join("compute.oci.tar");
    let status = Command::new("skopeo")
        .args(["copy", "-q"])
        .arg(format!("docker-archive:{}", archive.display()))
        .arg(format!("oci-archive:{}:compute", oci_archive.display()))
        .status()
        .expect("skopeo");
    assert!(status.success());
    let mut checks_of = Vec::new();
    let mut last = Value::Null;
    for input in [rootfs, &chroot, &img, &oci_archive, archive] {
        let (code, report) = verify(project, &input.to_string_lossy(), &[]);
        assert_eq!(code, Some(0), "{}: {report:#}", input.display());
        assert_eq!(report["kernel"], kernel);
        let skipped: Vec<&str> = report["skipped"]
            .as_array()
            .expect("skipped")
            .iter()
            .filter_map(|s| s["id"].as_str())
            .collect();
        for id in [
            "mofed_modules",
            "nvidia_modules",
            "peermem_after_mofed",
            "opensmd_disabled",
        ] {
            assert!(
                !skipped.contains(&id),
                "{}: {id} skipped: {report:#}",
                input.display()
            );
        }
        assert!(
            detail(&report, "nvidia_version").contains("is driver"),
            "{}: {report:#}",
            input.display()
        );
        checks_of.push(report["checks"].clone());
        last = report;
    }
    // The Warewulf chroot and the cpio read as the folder does: the same checks and details.
    for (form, checks) in ["chroot", "cpio"].iter().zip(&checks_of[1..]) {
        assert_eq!(checks, &checks_of[0], "the {form} reads as the folder does");
    }
    // A gigabyte each: gone before the next builds need the disk.
    for packed in [&img, &oci_archive] {
        std::fs::remove_file(packed).expect("remove a packed form");
    }
    last
}

/// Each fault, put into the real image's rootfs and taken out again, fails the rule that
/// names it, with no flag given.
pub fn each_fault_fails_by_the_image_alone(project: &Path, rootfs: &Path, kernel: &str) {
    let root = rootfs.display().to_string();
    let input = rootfs.to_string_lossy().into_owned();
    let modules = format!("{root}/lib/modules/{kernel}");
    let wants = format!("{root}/etc/systemd/system/multi-user.target.wants");
    let faults: &[(&str, &str, &str, &str)] = &[
        (
            "opensmd enabled",
            &format!("ln -s /usr/lib/systemd/system/opensmd.service {wants}/opensmd.service"),
            &format!("rm {wants}/opensmd.service"),
            "opensmd_disabled",
        ),
        (
            "openibd disabled",
            &format!("mv {wants}/openibd.service {root}/openibd.link"),
            &format!("mv {root}/openibd.link {wants}/openibd.service"),
            "openibd_enabled",
        ),
        (
            "mlx5_core resolving to the inbox copy",
            &format!(
                "cp {modules}/modules.dep {root}/dep.saved && inbox=$(cd {modules} && find kernel -name 'mlx5_core.ko*' | head -1) && \
                 test -n \"$inbox\" && sed -i \"s|^[^:]*/mlx5_core.ko[^:]*:|$inbox:|\" {modules}/modules.dep"
            ),
            &format!("mv {root}/dep.saved {modules}/modules.dep"),
            "mofed_modules",
        ),
        (
            "nvidia-modeset missing",
            &format!(
                "cp {modules}/modules.dep {root}/dep.saved && f=$(cd {modules} && find . -name 'nvidia*-modeset.ko*') && \
                 test -n \"$f\" && mv {modules}/$f {root}/modeset.saved && \
                 sed -i '\\|^[^:]*-modeset.ko[^:]*:|d' {modules}/modules.dep && echo $f > {root}/modeset.path"
            ),
            &format!(
                "mv {root}/modeset.saved {modules}/$(cat {root}/modeset.path) && rm {root}/modeset.path && mv {root}/dep.saved {modules}/modules.dep"
            ),
            "nvidia_modules",
        ),
        (
            "a DKMS signing key left behind",
            &format!("mkdir -p {root}/var/lib/dkms && printf 'key' > {root}/var/lib/dkms/mok.key"),
            &format!("rm {root}/var/lib/dkms/mok.key"),
            "no_private_keys",
        ),
    ];
    for (what, put, take, rule) in faults {
        sh(put);
        let (code, report) = verify(project, &input, &[]);
        sh(take);
        assert_eq!(code, Some(1), "{what}: {report:#}");
        assert_eq!(
            failed(&report),
            vec![rule.to_string()],
            "{what}: {report:#}"
        );
    }
    // The subnet-manager image is allowed its opensmd.
    sh(&format!(
        "ln -s /usr/lib/systemd/system/opensmd.service {wants}/opensmd.service"
    ));
    let (code, _) = verify(project, &input, &["--allow-opensm"]);
    sh(&format!("rm {wants}/opensmd.service"));
    assert_eq!(code, Some(0));
    // And the pristine image passes again: every fault was taken out.
    let (code, report) = verify(project, &input, &[]);
    assert_eq!(code, Some(0), "{report:#}");
}
