//! The rules on small in-memory images: a good compute image, and each classic fault, judged
//! with only the image as input unless a test says otherwise.

use crate::image::{Expect, KernelSource};
use crate::modinfo::fake_module;
use crate::report::{verify, Report};
use crate::snapshot::Snapshot;
use spec::NvidiaFlavor;

pub(super) const K: &str = "6.1.0-50-amd64";

pub(super) fn module(s: &mut Snapshot, rel: &str, fields: &[(&str, &str)]) {
    let vermagic = format!("{K} SMP preempt mod_unload modversions");
    let mut all = vec![("vermagic", vermagic.as_str())];
    all.extend_from_slice(fields);
    let bytes = fake_module(&all);
    s.add_file(
        &format!("/usr/lib/modules/{K}/{rel}"),
        bytes.len() as u64,
        Some(bytes.as_slice()),
    )
    .expect("module");
}

pub(super) fn text(s: &mut Snapshot, path: &str, content: &str) {
    s.add_file(path, content.len() as u64, Some(content.as_bytes()))
        .expect("file");
}

pub(super) fn enable(s: &mut Snapshot, unit: &str) {
    s.add_symlink(
        &format!("/etc/systemd/system/multi-user.target.wants/{unit}"),
        &format!("/usr/lib/systemd/system/{unit}"),
    );
}

/// A good MOFED + NVIDIA compute image, usrmerged as Debian 12 is.
pub(super) fn good() -> Snapshot {
    let mut s = Snapshot::default();
    s.add_symlink("/lib", "usr/lib");
    s.add_symlink("/bin", "usr/bin");
    text(&mut s, "/usr/bin/sh", "");
    text(&mut s, &format!("/boot/vmlinuz-{K}"), "kernel");
    text(&mut s, &format!("/boot/initrd.img-{K}"), "initrd");
    text(
        &mut s,
        "/usr/bin/ofed_info",
        "echo MLNX_OFED_LINUX-24.10-2.1.8.0:\n",
    );
    let mut dep = String::new();
    for name in crate::image::MOFED_MODULES {
        // The inbox copy, shadowed by MOFED's.
        module(
            &mut s,
            &format!("kernel/drivers/infiniband/{name}.ko"),
            &[("name", name), ("intree", "Y")],
        );
        module(
            &mut s,
            &format!("extra/mlnx-ofa_kernel/{name}.ko"),
            &[("name", name)],
        );
        dep.push_str(&format!("extra/mlnx-ofa_kernel/{name}.ko:\n"));
    }
    for name in ["nvidia", "nvidia-uvm", "nvidia-modeset", "nvidia-peermem"] {
        let depends = if name == "nvidia-peermem" {
            "nvidia,ib_core"
        } else {
            ""
        };
        let canonical = name.replace('-', "_");
        module(
            &mut s,
            &format!("kernel/drivers/video/{name}.ko"),
            &[
                ("name", &canonical),
                ("depends", depends),
                ("version", "580.65.06"),
            ],
        );
        dep.push_str(&format!("kernel/drivers/video/{name}.ko:\n"));
    }
    text(&mut s, &format!("/usr/lib/modules/{K}/modules.dep"), &dep);
    enable(&mut s, "openibd.service");
    s
}

pub(super) fn failed(report: &Report) -> Vec<&str> {
    report
        .checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| c.id.as_str())
        .collect()
}

pub(super) fn skipped(report: &Report) -> Vec<&str> {
    report.skipped.iter().map(|c| c.id.as_str()).collect()
}

pub(super) fn detail<'a>(report: &'a Report, id: &str) -> &'a str {
    &report
        .checks
        .iter()
        .find(|c| c.id == id)
        .expect("check ran")
        .detail
}

#[test]
fn a_good_image_passes_every_rule_with_only_the_image_as_input() {
    let report = verify(&good(), "x", &Expect::default());
    assert!(report.ok, "{:#?}", report.checks);
    assert_eq!(report.kernel.as_deref(), Some(K));
    assert_eq!(report.kernel_source, Some(KernelSource::OnlyOne));
    // Only the initramfs rule, modules_signed, doca_version and no_build_tools wait to be
    // asked; an initramfs is there, so its rule runs too. A dpkg image has no rpm owners.
    assert_eq!(
        skipped(&report),
        vec![
            "modules_signed",
            "mofed_rpm_owner",
            "doca_version",
            "no_build_tools"
        ]
    );
    assert_eq!(report.checks.len(), crate::rules::RULES.len() - 4);
    assert!(detail(&report, "modules_dep").contains("copies it shadows"));
    assert!(detail(&report, "nvidia_version").contains("580.65.06"));
}

#[test]
fn an_image_without_mofed_or_nvidia_skips_their_rules_and_says_why() {
    let mut s = Snapshot::default();
    text(&mut s, "/bin/sh", "");
    text(&mut s, &format!("/boot/vmlinuz-{K}"), "kernel");
    module(&mut s, "kernel/fs/ext4.ko", &[("intree", "Y")]);
    // The kernel's own nvidia-named module is no NVIDIA driver.
    module(
        &mut s,
        "kernel/drivers/platform/x86/nvidia-wmi-ec-backlight.ko",
        &[("intree", "Y"), ("name", "nvidia_wmi_ec_backlight")],
    );
    text(
        &mut s,
        &format!("/lib/modules/{K}/modules.dep"),
        "kernel/fs/ext4.ko:\nkernel/drivers/platform/x86/nvidia-wmi-ec-backlight.ko:\n",
    );
    let report = verify(&s, "x", &Expect::default());
    assert!(report.ok, "{:#?}", report.checks);
    assert_eq!(
        skipped(&report),
        vec![
            "modules_signed",
            "mofed_modules",
            "mofed_rpm_owner",
            "ofed_info",
            "doca_version",
            "openibd_enabled",
            "nvidia_modules",
            "peermem_after_mofed",
            "nvidia_version",
            "nvidia_versions_match",
            "nvidia_kernel_flavor",
            "initramfs",
            "no_build_tools"
        ]
    );
    assert!(report.skipped[1].reason.contains("no MOFED in the image"));
}

#[test]
fn opensmd_enabled_fails_whatever_was_asked_unless_allowed() {
    let mut s = good();
    enable(&mut s, "opensmd.service");
    assert_eq!(
        failed(&verify(&s, "x", &Expect::default())),
        vec!["opensmd_disabled"]
    );
    let allowed = Expect {
        allow_opensm: true,
        ..Expect::default()
    };
    assert!(verify(&s, "x", &allowed).ok);
}

#[test]
fn openibd_disabled_fails_when_mofed_is_found() {
    let mut s = good();
    s.remove("/etc/systemd/system/multi-user.target.wants/openibd.service");
    assert_eq!(
        failed(&verify(&s, "x", &Expect::default())),
        vec!["openibd_enabled"]
    );
}

#[test]
fn mlx5_resolving_to_the_inbox_copy_fails() {
    let mut s = good();
    let dep_path = format!("/usr/lib/modules/{K}/modules.dep");
    let dep = s.read_text(&dep_path).expect("dep").replace(
        "extra/mlnx-ofa_kernel/mlx5_core.ko",
        "kernel/drivers/infiniband/mlx5_core.ko",
    );
    text(&mut s, &dep_path, &dep);
    let report = verify(&s, "x", &Expect::default());
    assert_eq!(failed(&report), vec!["mofed_modules"]);
    assert!(detail(&report, "mofed_modules").contains("mlx5_core loads the inbox kernel/"));
}

#[test]
fn a_peermem_stub_behind_debians_alias_fails_though_a_good_copy_sits_beside_it() {
    let mut s = good();
    module(
        &mut s,
        "updates/dkms/nvidia-current-peermem.ko",
        &[
            ("name", "nvidia_current_peermem"),
            ("depends", "nvidia_current"),
        ],
    );
    text(
        &mut s,
        "/etc/modprobe.d/nvidia.conf",
        "alias nvidia-peermem nvidia-current-peermem\n",
    );
    let dep_path = format!("/usr/lib/modules/{K}/modules.dep");
    let dep = s.read_text(&dep_path).expect("dep")
        + "updates/dkms/nvidia-current-peermem.ko: kernel/drivers/video/nvidia.ko\n";
    text(&mut s, &dep_path, &dep);
    let report = verify(&s, "x", &Expect::default());
    assert_eq!(failed(&report), vec!["peermem_after_mofed"]);
    assert!(
        detail(&report, "peermem_after_mofed").contains("nvidia-current-peermem.ko"),
        "{}",
        detail(&report, "peermem_after_mofed")
    );
}

#[test]
fn a_missing_nvidia_modeset_and_a_wrong_version_fail() {
    let mut s = good();
    s.remove(&format!(
        "/usr/lib/modules/{K}/kernel/drivers/video/nvidia-modeset.ko"
    ));
    let dep_path = format!("/usr/lib/modules/{K}/modules.dep");
    let dep = s
        .read_text(&dep_path)
        .expect("dep")
        .replace("kernel/drivers/video/nvidia-modeset.ko:\n", "");
    text(&mut s, &dep_path, &dep);
    let pinned = Expect {
        nvidia: Some("535.261.03".into()),
        ..Expect::default()
    };
    let report = verify(&s, "x", &pinned);
    assert_eq!(failed(&report), vec!["nvidia_modules", "nvidia_version"]);
    assert!(detail(&report, "nvidia_modules").contains("modprobe nvidia-modeset loads nothing"));
    assert!(detail(&report, "nvidia_version").contains("580.65.06, not the pinned 535.261.03"));
}

#[test]
fn nvidia_parts_of_another_version_are_named() {
    let mut s = good();
    let lib = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06";
    text(&mut s, lib, "");
    text(
        &mut s,
        "/usr/lib/firmware/nvidia/580.65.06/gsp_ga10x.bin",
        "",
    );
    let report = verify(&s, "x", &Expect::default());
    assert!(report.ok, "{:#?}", report.checks);
    assert!(detail(&report, "nvidia_versions_match").contains(lib));

    // A library of another driver, and GSP firmware of another version only.
    text(&mut s, "/usr/lib64/libnvidia-ml.so.535.261.03", "");
    s.remove("/usr/lib/firmware/nvidia/580.65.06/gsp_ga10x.bin");
    text(
        &mut s,
        "/usr/lib/firmware/nvidia/535.261.03/gsp_tu10x.bin",
        "",
    );
    let report = verify(&s, "x", &Expect::default());
    assert_eq!(failed(&report), vec!["nvidia_versions_match"]);
    let said = detail(&report, "nvidia_versions_match");
    assert!(
        said.contains("/usr/lib64/libnvidia-ml.so.535.261.03 is 535.261.03"),
        "{said}"
    );
    assert!(said.contains("gsp_tu10x.bin is 535.261.03"), "{said}");
    assert!(!said.contains("libcuda"), "{said}");
}

#[test]
fn a_module_for_another_kernel_and_a_stray_module_folder_are_named() {
    let mut s = good();
    let stray = fake_module(&[("vermagic", "6.18.44-host SMP")]);
    s.add_file(
        &format!("/usr/lib/modules/{K}/extra/stray.ko"),
        stray.len() as u64,
        Some(stray.as_slice()),
    )
    .expect("stray");
    s.add_dir("/usr/lib/modules/6.18.44-host");
    let report = verify(&s, "x", &Expect::default());
    assert_eq!(
        failed(&report),
        vec!["one_kernel", "vermagic", "modules_dep"]
    );
    assert!(detail(&report, "vermagic").contains(&format!(
        "/lib/modules/{K}/extra/stray.ko is built for 6.18.44-host"
    )));
}

#[test]
fn two_out_of_tree_builds_of_one_module_and_a_private_key_fail() {
    let mut s = good();
    module(&mut s, "updates/mlx5_core.ko", &[("name", "mlx5_core")]);
    text(&mut s, "/var/lib/dkms/mok.key", "binary key");
    text(&mut s, "/root/signing.pem", "-----BEGIN PRIVATE KEY-----\n");
    text(&mut s, "/etc/pki/ca.pem", "-----BEGIN CERTIFICATE-----\n");
    let report = verify(&s, "x", &Expect::default());
    assert_eq!(
        failed(&report),
        vec!["duplicate_modules", "no_private_keys"]
    );
    let keys = detail(&report, "no_private_keys");
    assert!(keys.contains("/var/lib/dkms/mok.key") && keys.contains("/root/signing.pem"));
    assert!(!keys.contains("ca.pem"), "{keys}");
}

#[test]
fn no_kernel_found_fails_one_kernel_and_skips_what_needs_one() {
    let mut s = good();
    text(&mut s, "/boot/vmlinuz-6.18.44-host", "kernel");
    let report = verify(&s, "x", &Expect::default());
    assert_eq!(failed(&report), vec!["one_kernel"]);
    assert!(skipped(&report).contains(&"vermagic"));
}

#[test]
fn the_verify_page_lists_every_rule_as_the_table_says() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/verify.md"))
            .expect("docs/verify.md");
    let start = "<!-- verify rules: generated from crates/verify/src/rules/mod.rs -->\n";
    let end = "<!-- end of verify rules -->";
    let listed = readme
        .split_once(start)
        .and_then(|(_, rest)| rest.split_once(end))
        .map(|(table, _)| table)
        .expect("docs/verify.md's rule list markers");
    assert_eq!(
        listed,
        crate::rules::rules_table(),
        "docs/verify.md's rule list is out of date; put this between the markers:\n{}",
        crate::rules::rules_table()
    );
}

#[test]
fn a_dkms_build_for_the_host_kernel_fails_one_kernel() {
    let mut s = good();
    s.add_dir(&format!(
        "/var/lib/dkms/nvidia-current/535.261.03/{K}/x86_64"
    ));
    s.add_symlink(
        "/var/lib/dkms/nvidia-current/535.261.03/source",
        "/usr/src/nvidia-current-535.261.03",
    );
    assert!(verify(&s, "x", &Expect::default()).ok);
    s.add_dir("/var/lib/dkms/nvidia-current/535.261.03/6.18.44-host/x86_64");
    let report = verify(&s, "x", &Expect::default());
    assert_eq!(failed(&report), vec!["one_kernel"]);
    assert!(detail(&report, "one_kernel").contains("535.261.03/6.18.44-host"));
}

#[test]
fn build_tools_fail_no_build_tools_only_when_asked() {
    let asked = Expect {
        no_build_tools: true,
        ..Expect::default()
    };
    let clean = good();
    assert!(verify(&clean, "x", &asked).ok);
    assert_eq!(
        detail(&verify(&clean, "x", &asked), "no_build_tools"),
        "no C compiler, kernel headers or DKMS"
    );
    let mut s = good();
    text(&mut s, "/usr/bin/gcc-12", "");
    s.add_symlink("/usr/bin/gcc", "gcc-12");
    text(&mut s, "/usr/sbin/dkms", "");
    text(
        &mut s,
        &format!("/usr/src/linux-headers-{K}/Makefile"),
        "all:",
    );
    s.add_symlink(
        &format!("/usr/lib/modules/{K}/build"),
        &format!("/usr/src/linux-headers-{K}"),
    );
    assert!(skipped(&verify(&s, "x", &Expect::default())).contains(&"no_build_tools"));
    let report = verify(&s, "x", &asked);
    assert_eq!(failed(&report), vec!["no_build_tools"]);
    let found = detail(&report, "no_build_tools");
    for path in [
        "/usr/bin/gcc-12",
        "/usr/bin/gcc",
        "/usr/sbin/dkms",
        "/usr/src/linux-headers-6.1.0-50-amd64",
        "/lib/modules/6.1.0-50-amd64/build (the kernel's build tree)",
    ] {
        assert!(found.contains(path), "{path} not in {found}");
    }
}

#[test]
fn the_nvidia_flavour_is_read_from_the_licence_and_held_to_the_recipe() {
    let with_license = |license: &str| {
        let mut s = good();
        module(
            &mut s,
            "kernel/drivers/video/nvidia.ko",
            &[
                ("name", "nvidia"),
                ("depends", ""),
                ("version", "580.65.06"),
                ("license", license),
            ],
        );
        s
    };
    let asked = |flavor| Expect {
        nvidia_flavor: Some(flavor),
        ..Expect::default()
    };
    let report = verify(
        &with_license("Dual MIT/GPL"),
        "x",
        &asked(NvidiaFlavor::Open),
    );
    assert!(report.ok, "{:#?}", report.checks);
    assert!(detail(&report, "nvidia_kernel_flavor").contains("is the open flavour"));
    let report = verify(&with_license("NVIDIA"), "x", &asked(NvidiaFlavor::Open));
    assert_eq!(failed(&report), vec!["nvidia_kernel_flavor"]);
    assert!(
        detail(&report, "nvidia_kernel_flavor")
            .contains("nvidia.ko is the proprietary flavour (licence NVIDIA), not the open one"),
        "{}",
        detail(&report, "nvidia_kernel_flavor")
    );
    let report = verify(&with_license("GPL"), "x", &asked(NvidiaFlavor::Proprietary));
    assert_eq!(failed(&report), vec!["nvidia_kernel_flavor"]);
    assert!(detail(&report, "nvidia_kernel_flavor").contains("licence GPL, which is neither"));
    // Without a flavour asked for, the flavour found is reported.
    let report = verify(&with_license("NVIDIA"), "x", &Expect::default());
    assert!(detail(&report, "nvidia_kernel_flavor").contains("proprietary flavour"));
}
