//! SBOMs (issue 32 point 4): `imgbuild sbom` on a small built image gives the same bytes twice
//! and lists every package `dpkg-query` lists in it; the build writes one beside its outputs;
//! `verify --sbom` fails an image whose package changed, naming it, and refuses a file that is
//! no SBOM as bad input. Needs root and debootstrap, as CI has.

use crate::common;

use std::path::Path;

use common::*;

fn sbom(project: &Path, cache: &Path, image: &Path, out: &Path) -> Vec<u8> {
    let result = imgbuild_env(
        project,
        &[
            "sbom",
            &image.to_string_lossy(),
            "--out",
            &out.to_string_lossy(),
        ],
        &[("IMGBUILD_CACHE", cache)],
    );
    assert!(result.status.success(), "sbom: {}", stderr(&result));
    std::fs::read(out).expect("the SBOM")
}

#[test]
fn the_sbom_of_a_built_image_is_reproducible_complete_and_checked_by_verify() {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-sbom-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let project = work.path().join("project");
    copy_fixture("images", &project);
    let cache = work.path().join("cache");
    shared_base_cache(&cache);
    let out = work.path().join("out");
    let built = imgbuild_env(
        &project,
        &[
            "--json",
            "build",
            "--no-verify",
            "--out",
            &out.to_string_lossy(),
            "repro-test",
            "--format",
            "oci,chroot",
        ],
        &[
            ("IMGBUILD_CACHE", &cache),
            ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
        ],
    );
    assert!(built.status.success(), "build: {}", stderr(&built));
    let dir = out.join("repro-test");
    let rootfs = dir.join("rootfs");
    // The build's SBOM lists what dpkg-query finds (the e2e test's check, on a small image).
    let missing = sbom_misses(&rootfs, &dir.join("sbom.cdx.json"));
    assert!(missing.is_empty(), "not in the build's SBOM: {missing:?}");

    let oci = dir.join("oci");
    let first = sbom(&project, &cache, &oci, &work.path().join("a.json"));
    let second = sbom(&project, &cache, &oci, &work.path().join("b.json"));
    assert_eq!(first, second, "the same image gives the same bytes");
    let doc: serde_json::Value = serde_json::from_slice(&first).expect("json");
    assert_eq!(doc["specVersion"], "1.5");
    assert!(doc["metadata"]["properties"].as_array().is_some_and(|ps| ps
        .iter()
        .any(|p| p["name"] == "imgbuild:pin:kernel" && p["value"] == "6.1.0-50-amd64")));
    let from_oci = work.path().join("from-oci.json");
    std::fs::write(&from_oci, &first).expect("write");
    assert!(sbom_misses(&rootfs, &from_oci).is_empty());

    // The image still matches; then a package's version changes and verify names it.
    let verify = |sbom_file: &Path| {
        imgbuild_env(
            &project,
            &[
                "verify",
                &rootfs.to_string_lossy(),
                "--sbom",
                &sbom_file.to_string_lossy(),
            ],
            &[("IMGBUILD_CACHE", &cache)],
        )
    };
    let same = verify(&from_oci);
    assert!(
        stdout(&same).contains("ok   sbom"),
        "{}{}",
        stdout(&same),
        stderr(&same)
    );
    let status = rootfs.join("var/lib/dpkg/status");
    let text = std::fs::read_to_string(&status).expect("status");
    let at = text.find("Package: bash\n").expect("bash is installed");
    let version_at = at + text[at..].find("\nVersion: ").expect("a version") + 10;
    let changed = format!("{}9:{}", &text[..version_at], &text[version_at..]);
    std::fs::write(&status, changed).expect("write status");
    let caught = verify(&from_oci);
    assert_eq!(caught.status.code(), Some(1), "{}", stderr(&caught));
    let report = stdout(&caught);
    assert!(
        report.contains("FAIL sbom") && report.contains("changed: package bash:amd64: "),
        "{report}"
    );
    // A module added under updates/ (as an installer would) is named, and the host's modinfo
    // finds it where the SBOM lists it (the e2e test's module check).
    let updates = rootfs.join("lib/modules/6.1.0-50-amd64/updates");
    std::fs::create_dir_all(&updates).expect("mkdir");
    let module = verify::modinfo::fake_module(&[
        ("version", "1.0"),
        ("vermagic", "6.1.0-50-amd64 SMP mod_unload "),
        ("name", "site_driver"),
    ]);
    std::fs::write(updates.join("site_driver.ko"), module).expect("module");
    let added = stdout(&verify(&from_oci));
    assert!(
        added.contains(
            "added: module site_driver (/lib/modules/6.1.0-50-amd64/updates/site_driver.ko)"
        ),
        "{added}"
    );
    let now = sbom(&project, &cache, &rootfs, &work.path().join("now.json"));
    std::fs::write(work.path().join("now.json"), &now).expect("write");
    assert_eq!(
        sbom_misses(&rootfs, &work.path().join("now.json")),
        Vec::<String>::new()
    );
    std::fs::remove_file(updates.join("site_driver.ko")).expect("rm");
    let without = work.path().join("without.json");
    sbom(&project, &cache, &rootfs, &without);
    std::fs::write(updates.join("site_driver.ko"), b"not a module").expect("write");
    assert!(
        sbom_misses(&rootfs, &without).is_empty(),
        "a file modinfo cannot read is not counted"
    );
    // A file that is no SBOM is bad input.
    let bad = verify(&status);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("not a CycloneDX JSON document"),
        "{}",
        stderr(&bad)
    );
}
