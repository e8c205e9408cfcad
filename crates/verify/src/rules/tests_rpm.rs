//! An rpm-based MOFED image: its modules owned by `kmod-mlnx-ofa_kernel` in the image's rpm
//! database (`rpmdb.sqlite`, written here as rpm writes its `Packages` table), and the same
//! modules installed outside rpm, which `mofed_rpm_owner` names.

use super::tests::{detail, failed, good, K};
use crate::image::Expect;
use crate::report::verify;
use crate::snapshot::Snapshot;

/// A header blob of `tags` (tag, type, count, value).
fn blob(tags: &[(u32, u32, u32, Vec<u8>)]) -> Vec<u8> {
    let (mut index, mut data) = (Vec::new(), Vec::new());
    for (tag, kind, count, value) in tags {
        for word in [*tag, *kind, data.len() as u32, *count] {
            index.extend_from_slice(&word.to_be_bytes());
        }
        data.extend_from_slice(value);
    }
    let mut out = (tags.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend(index);
    out.extend(data);
    out
}

/// The image `s` with an rpm database whose kmod package owns MOFED's modules but `left_out`.
fn with_rpmdb(s: &mut Snapshot, left_out: &str) {
    let names: Vec<&str> = crate::image::MOFED_MODULES
        .iter()
        .copied()
        .filter(|n| *n != left_out)
        .collect();
    let bases: Vec<u8> = names
        .iter()
        .flat_map(|n| format!("{n}.ko\0").into_bytes())
        .collect();
    let indexes: Vec<u8> = names.iter().flat_map(|_| 0u32.to_be_bytes()).collect();
    let header = blob(&[
        (1000, 6, 1, b"kmod-mlnx-ofa_kernel\0".to_vec()),
        (1001, 6, 1, b"24.10\0".to_vec()),
        (1002, 6, 1, b"OFED.2.1.8.0\0".to_vec()),
        (1116, 4, names.len() as u32, indexes),
        (1117, 8, names.len() as u32, bases),
        (
            1118,
            8,
            1,
            format!("/lib/modules/{K}/extra/mlnx-ofa_kernel/\0").into_bytes(),
        ),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rpmdb.sqlite");
    let db = rusqlite::Connection::open(&path).expect("sqlite");
    db.execute_batch(
        "CREATE TABLE Packages (hnum INTEGER PRIMARY KEY AUTOINCREMENT, blob BLOB NOT NULL)",
    )
    .expect("table");
    db.execute("INSERT INTO Packages (blob) VALUES (?1)", [header])
        .expect("insert");
    drop(db);
    let bytes = std::fs::read(&path).expect("read");
    s.add_file(
        "/var/lib/rpm/rpmdb.sqlite",
        bytes.len() as u64,
        Some(bytes.as_slice()),
    )
    .expect("rpmdb");
}

#[test]
fn modules_the_kmod_package_owns_pass() {
    let mut s = good();
    with_rpmdb(&mut s, "");
    let report = verify(&s, "x", &Expect::default());
    assert!(report.ok, "{:#?}", report.checks);
    assert!(
        detail(&report, "mofed_rpm_owner")
            .contains("belong to kmod-mlnx-ofa_kernel-24.10-OFED.2.1.8.0"),
        "{:#?}",
        report.checks
    );
}

#[test]
fn a_module_no_package_owns_is_named() {
    let mut s = good();
    with_rpmdb(&mut s, "mlx5_ib");
    let report = verify(&s, "x", &Expect::default());
    assert_eq!(failed(&report), vec!["mofed_rpm_owner"]);
    let said = detail(&report, "mofed_rpm_owner");
    assert!(
        said.contains(&format!(
            "no package owns /lib/modules/{K}/extra/mlnx-ofa_kernel/mlx5_ib.ko"
        )) || said.contains(&format!(
            "no package owns /usr/lib/modules/{K}/extra/mlnx-ofa_kernel/mlx5_ib.ko"
        )),
        "{said}"
    );
}

#[test]
fn an_unreadable_database_fails() {
    let mut s = good();
    s.add_file("/var/lib/rpm/rpmdb.sqlite", 5, Some(&b"junk!"[..]))
        .expect("rpmdb");
    let report = verify(&s, "x", &Expect::default());
    assert_eq!(failed(&report), vec!["mofed_rpm_owner"]);
    assert!(detail(&report, "mofed_rpm_owner").contains("cannot be read"));
}
