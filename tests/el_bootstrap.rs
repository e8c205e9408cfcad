//! `bootstrap: dnf` (issue 29): a base made by this machine's dnf with `--installroot` from the
//! fixture EL world's signed repository, served on 127.0.0.1 as a site's Rocky mirror would
//! be, with the recipe's roles run over it. Its rpm database is the image's `/var/lib/rpm`
//! (read back by `rpm --root`, the repository's key imported), never the building user's
//! home; dnf's cache and logs stay out; the base is cached by its inputs, so a second build
//! makes the same image without running dnf; EL 8 and a repository without a key are refused
//! before any work. Needs root, dnf, rpm, rpmbuild, createrepo-c, gnupg and busybox-static.

use crate::common;
use crate::world;

use std::path::Path;
use std::process::Command;

use common::*;

fn recipe(project: &Path, name: &str, build_from: &str, repos: &str) {
    std::fs::write(
        project.join(format!("images/{name}.yml")),
        format!(
            "- name: {name}.yml\n  hosts: localhost\n  vars:\n    bootstrap: dnf\n    build_from: \"{build_from}\"\n    dnf_repos: {repos}\n    bootstrap_include: [el-standin-release, el-shell, el-app]\n    image_name: {name}\n    kernel_version: \"6.1.0-50-amd64\"\n    greeting: dnf\n  facts: {{distribution: Rocky, distribution_version: \"9.5\"}}\n  roles: [plain]\n"
        ),
    )
    .expect("recipe");
}

#[test]
fn a_dnf_base_from_the_sites_repository() {
    require_root();
    let world = world::world();
    let url = serve_dir(&world);
    let work = tempfile::Builder::new()
        .prefix("imgbuild-el-bootstrap-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let project = work.path().join("project");
    copy_fixture("images", &project);
    let repos = format!(
        "[{{name: el, baseurl: \"{url}/el/\", gpgkey: \"{url}/{}\"}}]",
        world::KEY_FILE
    );
    recipe(&project, "el-dnf-base", "9.5", &repos);
    let (cache, home) = (work.path().join("cache"), work.path().join("home"));
    std::fs::create_dir_all(&home).expect("home");
    let out = work.path().join("out");
    let build = |name: &str| {
        imgbuild_env(
            &project,
            &[
                "--json",
                "build",
                name,
                "--no-verify",
                "--format",
                "oci,chroot",
                "--out",
                &out.to_string_lossy(),
            ],
            &[
                ("IMGBUILD_CACHE", &cache),
                ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
                ("HOME", &home),
            ],
        )
    };

    let first = built_event(&build("el-dnf-base"));
    let rootfs = out.join("el-dnf-base/rootfs");
    let greeting = std::fs::read_to_string(rootfs.join("srv/plain/greeting")).unwrap_or_default();
    assert!(
        greeting.starts_with("dnf from"),
        "the role ran over the base: {greeting:?}"
    );
    assert!(
        rootfs.join("var/lib/rpm/rpmdb.sqlite").is_file(),
        "the image's own rpm database"
    );
    assert!(
        !home.join(".rpmdb").exists(),
        "nothing in the building user's home"
    );
    for left_out in ["var/cache/dnf", "var/log/dnf.log", "var/log/dnf.rpm.log"] {
        assert!(
            !rootfs.join(left_out).exists(),
            "{left_out} stays out of the image"
        );
    }
    let listed = Command::new("rpm")
        .arg("--root")
        .arg(&rootfs)
        .args(["--dbpath", "/var/lib/rpm", "-qa", "--qf", "%{NAME}\\n"])
        .output()
        .expect("rpm");
    let names = String::from_utf8_lossy(&listed.stdout);
    for package in [
        "el-standin-release",
        "el-shell",
        "el-app",
        "el-base",
        "gpg-pubkey",
    ] {
        assert!(
            names.lines().any(|n| n == package),
            "{package} in the database: {names}"
        );
    }
    // The SBOM beside the outputs lists what rpm lists (its keys are no packages), with purls.
    let sbom: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join("el-dnf-base/sbom.cdx.json")).expect("sbom.cdx.json"),
    )
    .expect("JSON");
    let components = sbom["components"].as_array().expect("components");
    for package in names.lines().filter(|n| *n != "gpg-pubkey") {
        let component = components
            .iter()
            .find(|c| c["name"] == package)
            .unwrap_or_else(|| panic!("{package} in the SBOM: {sbom:#}"));
        let purl = component["purl"].as_str().unwrap_or_default();
        assert!(
            purl.starts_with("pkg:rpm/") && purl.contains(&format!("/{package}@")),
            "{purl}"
        );
    }
    assert!(!components.iter().any(|c| c["name"] == "gpg-pubkey"));
    let post = std::fs::read_to_string(rootfs.join("var/lib/el-app/post-ran")).unwrap_or_default();
    assert_eq!(
        post, "post ran for 1.0-1\n",
        "el-app's scriptlet ran in the base, with its shell"
    );

    // The same inputs: the cached base, the same image, dnf not run.
    let again = built_event(&build("el-dnf-base"));
    assert_eq!(again["manifest"], first["manifest"]);
    let base = &again["layers"][0];
    assert_eq!(base["cached"], true, "{again:#}");

    // Refused before any work, exit 2: EL 8, and a repository without a key.
    recipe(&project, "el8-dnf", "8.10", &repos);
    let unsigned = format!("[{{name: el, baseurl: \"{url}/el/\"}}]");
    recipe(&project, "el-unsigned", "9.5", &unsigned);
    for (name, says) in [
        ("el8-dnf", "bootstrap: docker"),
        ("el-unsigned", "gpgcheck: false"),
    ] {
        let refused = build(name);
        assert_eq!(
            refused.status.code(),
            Some(2),
            "{name}: {}",
            stderr(&refused)
        );
        assert!(
            stderr(&refused).contains(says),
            "{name}: {}",
            stderr(&refused)
        );
        assert!(!out.join(name).exists(), "{name}: nothing written");
    }
}
