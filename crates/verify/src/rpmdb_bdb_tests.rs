//! The reader against Berkeley DB itself: real rpm headers (rpmbuild, then rpm's own database)
//! written into a `Packages` hash database by libdb's `db5.3_load`, which rpm's read-only
//! Berkeley DB backend then lists. Needs rpm, rpmbuild and db5.3-util, as CI installs them.

use std::path::Path;
use std::process::Command;

use super::*;

fn run(command: &mut Command) -> String {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e} (CI installs rpm and db5.3-util)"));
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A package `name` of `files` files, built with rpmbuild and recorded in an rpm database
/// under `dir`: its header blob, as rpm stores it.
fn header_of(dir: &Path, name: &str, files: usize) -> Vec<u8> {
    let spec = dir.join(format!("{name}.spec"));
    std::fs::write(
        &spec,
        format!(
            "Name: {name}\nVersion: 1.0\nRelease: 3\nSummary: a fixture\nLicense: MIT\n\
             BuildArch: noarch\n%description\na fixture\n%install\n\
             mkdir -p %{{buildroot}}/usr/share/{name}\n\
             for i in $(seq 1 {files}); do echo $i > %{{buildroot}}/usr/share/{name}/a-file-$i; done\n\
             %files\n/usr/share/{name}\n"
        ),
    )
    .expect("spec");
    let top = dir.join("top");
    run(Command::new("rpmbuild")
        .arg("-bb")
        .arg("--define")
        .arg(format!("_topdir {}", top.display()))
        .arg(&spec));
    let db = dir.join(format!("db-{name}"));
    let rpm = top.join(format!("RPMS/noarch/{name}-1.0-3.noarch.rpm"));
    run(Command::new("rpm").arg("--dbpath").arg(&db).arg("--initdb"));
    run(Command::new("rpm")
        .arg("--dbpath")
        .arg(&db)
        .args(["-i", "--justdb", "--nodeps"])
        .arg(&rpm));
    let sqlite = rusqlite::Connection::open(db.join("rpmdb.sqlite")).expect("rpm's database");
    sqlite
        .query_row("SELECT blob FROM Packages", [], |row| row.get(0))
        .expect("one header")
}

/// `records` (instance, blob) as a `Packages` database of `page_size` written by db5.3_load,
/// with rpm's record 0 (the next instance number) before them.
fn packages_db(dir: &Path, page_size: usize, records: &[(u32, &[u8])]) -> std::path::PathBuf {
    let mut dump =
        format!("VERSION=3\nformat=bytevalue\ntype=hash\ndb_pagesize={page_size}\nHEADER=END\n");
    let next = records.len() as u32 + 1;
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    dump.push_str(&format!(
        " {}\n {}\n",
        hex(&0u32.to_le_bytes()),
        hex(&next.to_le_bytes())
    ));
    for (instance, blob) in records {
        dump.push_str(&format!(
            " {}\n {}\n",
            hex(&instance.to_le_bytes()),
            hex(blob)
        ));
    }
    dump.push_str("DATA=END\n");
    let folder = dir.join(format!("bdb-{page_size}"));
    std::fs::create_dir_all(&folder).expect("folder");
    std::fs::write(dir.join("dump"), dump).expect("dump");
    run(Command::new("db5.3_load")
        .arg("-f")
        .arg(dir.join("dump"))
        .arg(folder.join(PACKAGES)));
    folder
}

#[test]
fn reads_every_header_rpm_reads_from_a_berkeley_db_packages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let small = header_of(dir.path(), "fixture-small", 1);
    let big = header_of(dir.path(), "fixture-big", 300);
    assert!(big.len() > 16 * 1024, "the big header spans overflow pages");
    // Many records: several hash pages; the big one on overflow chains at either page size,
    // the small one inline in 64 KiB pages.
    let records: Vec<(u32, &[u8])> = (1..=40)
        .map(|i| (i, if i % 3 == 0 { &big[..] } else { &small[..] }))
        .collect();
    for page_size in [4096, 65_536] {
        let folder = packages_db(dir.path(), page_size, &records);
        let listed = run(Command::new("rpm")
            .args(["--define", "_db_backend bdb_ro", "--dbpath"])
            .arg(&folder)
            .args(["-qa", "--qf", "%{NAME}\n"]));
        let bytes = std::fs::read(folder.join(PACKAGES)).expect("Packages");
        let blobs = header_blobs(&bytes).expect("read");
        let ours: Vec<String> = blobs
            .iter()
            .map(|b| {
                crate::rpmdb::Header::parse(b)
                    .and_then(|h| h.string(crate::rpmdb::NAME))
                    .expect("a name")
            })
            .collect();
        let mut theirs: Vec<&str> = listed.lines().collect();
        let mut sorted = ours.clone();
        theirs.sort_unstable();
        sorted.sort_unstable();
        assert_eq!(sorted, theirs, "page size {page_size}");
        let expected: Vec<&[u8]> = records.iter().map(|(_, blob)| *blob).collect();
        assert_eq!(
            blobs, expected,
            "byte for byte, by instance, page size {page_size}"
        );
    }
}

#[test]
fn what_is_not_a_packages_database_is_refused_by_name() {
    assert!(header_blobs(b"short")
        .expect_err("too short")
        .contains("shorter than a Berkeley DB metadata page"));
    let mut meta = vec![0u8; 4096];
    meta[12..16].copy_from_slice(&0x0005_3162u32.to_le_bytes());
    assert!(header_blobs(&meta)
        .expect_err("magic")
        .contains("magic number"));
    meta[12..16].copy_from_slice(&HASH_MAGIC.to_le_bytes());
    meta[20..24].copy_from_slice(&4096u32.to_le_bytes());
    meta[25] = P_HASHMETA;
    meta[26] = 1;
    assert!(header_blobs(&meta)
        .expect_err("checksums")
        .contains("checksummed"));
    meta[26] = 0;
    // A hash page whose one pair's data lives on an overflow page that is not one.
    let mut page = vec![0u8; 4096];
    page[25] = P_HASH;
    page[20..22].copy_from_slice(&2u16.to_le_bytes());
    page[26..28].copy_from_slice(&4090u16.to_le_bytes());
    page[28..30].copy_from_slice(&4070u16.to_le_bytes());
    page[4090] = H_KEYDATA;
    page[4070] = H_OFFPAGE;
    page[4074..4078].copy_from_slice(&1u32.to_le_bytes());
    page[4078..4082].copy_from_slice(&100u32.to_le_bytes());
    let db = [meta, page].concat();
    assert!(header_blobs(&db)
        .expect_err("a broken chain")
        .contains("page 1 should be an overflow page"));
}

#[test]
fn a_rocky_8_tree_s_files_have_their_owners() {
    let dir = tempfile::tempdir().expect("tempdir");
    let header = header_of(dir.path(), "kmod-fixture", 2);
    let folder = packages_db(dir.path(), 4096, &[(1, &header)]);
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("var/lib/rpm")).expect("rpm folder");
    std::fs::copy(folder.join(PACKAGES), root.join("var/lib/rpm/Packages")).expect("copy");
    let snapshot = crate::snapshot::Snapshot::from_dir(&root).expect("snapshot");
    let owners = crate::rpmdb::owners(&snapshot)
        .expect("a database")
        .expect("read");
    assert_eq!(
        owners
            .get("/usr/share/kmod-fixture/a-file-2")
            .map(String::as_str),
        Some("kmod-fixture-1.0-3")
    );
    std::fs::write(root.join("var/lib/rpm/Packages"), b"not a database").expect("write");
    let snapshot = crate::snapshot::Snapshot::from_dir(&root).expect("snapshot");
    let error = crate::rpmdb::owners(&snapshot)
        .expect("a database")
        .expect_err("not a database");
    assert!(error.starts_with("/var/lib/rpm/Packages: "), "{error}");
}
