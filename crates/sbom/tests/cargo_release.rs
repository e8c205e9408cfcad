//! The release's SBOM of imgbuild's own binary, from this workspace's `cargo metadata` and
//! `Cargo.lock`: the crates the static binary links, each with the lock's checksum, and none
//! that only a build script or a test uses.

use std::path::Path;
use std::process::Command;

#[test]
fn the_static_binarys_crates_are_listed_with_the_locks_checksums() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--filter-platform", "x86_64-unknown-linux-musl"])
        .current_dir(&root)
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).expect("Cargo.lock");
    let bom = sbom::cargo::of_binary(&out.stdout, &lock, "imgbuild").expect("sbom");
    assert_eq!(bom.metadata.component.name, "imgbuild");
    let find = |name: &str| bom.components.iter().find(|c| c.name == name);
    for linked in ["zstd", "rustls", "liblzma", "planner", "engine"] {
        assert!(find(linked).is_some(), "{linked} is in the binary");
    }
    let zstd = find("zstd").expect("zstd");
    let version = zstd.version.as_deref().expect("version");
    let entry = format!("name = \"zstd\"\nversion = \"{version}\"\n");
    let checksum = lock
        .split("[[package]]")
        .find(|block| block.contains(&entry))
        .and_then(|block| block.lines().find_map(|l| l.strip_prefix("checksum = \"")))
        .map(|sum| sum.trim_end_matches('"'))
        .expect("zstd's checksum in the lock");
    assert_eq!(zstd.sha256(), Some(checksum));
    assert!(
        find("cc").is_none(),
        "cc builds the C libraries; it is not linked"
    );
    let bytes = sbom::to_bytes(&bom).expect("bytes");
    let again = sbom::to_bytes(&sbom::parse(&bytes).expect("reads back")).expect("bytes");
    assert_eq!(bytes, again, "the document reads back to the same bytes");
}
