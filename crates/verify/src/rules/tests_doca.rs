//! A DOCA-OFED image (its `ofed_info`, its modules in DKMS's `updates/dkms`, its `doca-ofed`
//! package) judged as MOFED images are, and the DOCA mistakes verify must name.

use super::tests::{detail, enable, failed, module, skipped, text, K};
use crate::image::Expect;
use crate::report::verify;
use crate::snapshot::Snapshot;

/// A DOCA-OFED 3.2 image: DKMS built the InfiniBand modules into updates/dkms.
fn doca(installed: &str) -> Snapshot {
    let mut s = Snapshot::default();
    s.add_symlink("/lib", "usr/lib");
    s.add_symlink("/bin", "usr/bin");
    text(&mut s, "/usr/bin/sh", "");
    text(&mut s, &format!("/boot/vmlinuz-{K}"), "kernel");
    text(
        &mut s,
        "/usr/bin/ofed_info",
        "if [ \"$1\" = -s ]; then echo OFED-internal-25.10-1.7.1:; fi\n",
    );
    let mut dep = String::new();
    for name in crate::image::MOFED_MODULES {
        module(
            &mut s,
            &format!("kernel/drivers/infiniband/{name}.ko"),
            &[("name", name), ("intree", "Y")],
        );
        module(
            &mut s,
            &format!("updates/dkms/{name}.ko"),
            &[("name", name)],
        );
        dep.push_str(&format!("updates/dkms/{name}.ko:\n"));
    }
    text(&mut s, &format!("/usr/lib/modules/{K}/modules.dep"), &dep);
    let status = format!(
        "Package: dkms\nStatus: install ok installed\nVersion: 3.0.10-8\n\nPackage: doca-ofed\nStatus: install ok installed\nVersion: {installed}\n"
    );
    text(&mut s, "/var/lib/dpkg/status", &status);
    enable(&mut s, "openibd.service");
    s
}

fn asked(doca: &str) -> Expect {
    Expect {
        doca: Some(doca.into()),
        ..Expect::default()
    }
}

#[test]
fn a_doca_image_is_recognised_by_its_ofed_info_modules_and_package() {
    // With only the image as input: DOCA's stack is found and passes as MOFED's would.
    let report = verify(&doca("3.2.1"), "x", &Expect::default());
    assert!(report.ok, "{:#?}", report.checks);
    assert!(detail(&report, "ofed_info").contains("OFED-internal-25.10-1.7.1"));
    assert!(detail(&report, "mofed_modules").contains("out-of-tree"));
    assert!(!skipped(&report).contains(&"doca_version"));
    // Held to the recipe's DOCA version (the io.imgbuild.doca label, --doca).
    let report = verify(&doca("3.2.1"), "x", &asked("3.2.1"));
    assert!(report.ok, "{:#?}", report.checks);
    assert!(detail(&report, "doca_version").contains("doca-ofed 3.2.1 is DOCA 3.2.1's"));
    // A Debian revision of the DOCA version is that version.
    assert!(verify(&doca("3.2.1-0.1"), "x", &asked("3.2.1")).ok);
}

#[test]
fn another_doca_or_mlnx_ofed_where_doca_was_asked_for_fails_naming_it() {
    let report = verify(&doca("3.1.0"), "x", &asked("3.2.1"));
    assert_eq!(failed(&report), vec!["doca_version"]);
    assert!(
        detail(&report, "doca_version").contains("doca-ofed 3.1.0 is installed, not DOCA 3.2.1's"),
        "{}",
        detail(&report, "doca_version")
    );
    // "3.2.10" is not "3.2.1".
    assert_eq!(
        failed(&verify(&doca("3.2.10"), "x", &asked("3.2.1"))),
        vec!["doca_version"]
    );
    // MLNX_OFED's ofed_info where DOCA was asked for.
    let mut s = doca("3.2.1");
    text(
        &mut s,
        "/usr/bin/ofed_info",
        "echo MLNX_OFED_LINUX-24.10-2.1.8.0:\n",
    );
    let report = verify(&s, "x", &asked("3.2.1"));
    assert_eq!(failed(&report), vec!["ofed_info"]);
    assert!(detail(&report, "ofed_info").contains("not DOCA-OFED's OFED-internal-"));
    // And DOCA's where MLNX_OFED was asked for.
    let mofed = Expect {
        mofed: Some("24.10-2.1.8.0".into()),
        ..Expect::default()
    };
    let report = verify(&doca("3.2.1"), "x", &mofed);
    assert_eq!(failed(&report), vec!["ofed_info"]);
    assert!(detail(&report, "ofed_info").contains("reports OFED-internal-25.10-1.7.1"));
}

#[test]
fn doca_asked_for_but_not_installed_fails() {
    let mut s = doca("3.2.1");
    text(
        &mut s,
        "/var/lib/dpkg/status",
        "Package: doca-ofed\nStatus: deinstall ok config-files\nVersion: 3.2.1\n",
    );
    let report = verify(&s, "x", &asked("3.2.1"));
    assert_eq!(failed(&report), vec!["doca_version"]);
    assert!(detail(&report, "doca_version").contains("no doca-ofed package is installed"));
}
