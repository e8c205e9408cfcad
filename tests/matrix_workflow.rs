//! The version-matrix workflow on a temporary git repository holding a copy of the project:
//! `matrix set`, `affected`, `matrix --diff`, `mirror check` and `mirror lock`.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{imgbuild, imgbuild_env, repo_root, serve_dir, stderr, stdout};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    stdout(&out)
}

/// A git repository with the project's images, roles and mirror.toml, all committed.
fn project_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for item in ["images", "roles", "mirror.toml"] {
        let status = Command::new("cp")
            .arg("-a")
            .arg(repo_root().join(item))
            .arg(dir.path())
            .status()
            .expect("cp");
        assert!(status.success());
    }
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "project"]);
    dir
}

fn affected(dir: &Path) -> Vec<String> {
    let out = imgbuild(dir, &["affected", "--since", "HEAD"]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).lines().map(str::to_owned).collect()
}

fn all_images(dir: &Path) -> Vec<String> {
    let mut images: Vec<String> = std::fs::read_dir(dir.join("images"))
        .expect("images")
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".yml").map(str::to_owned)
        })
        .collect();
    images.sort();
    images
}

fn append(path: &Path, text: &str) {
    let mut content = std::fs::read_to_string(path).expect("read");
    content.push_str(text);
    std::fs::write(path, content).expect("write");
}

#[test]
fn affected_follows_each_images_inputs() {
    let repo = project_repo();
    let dir = repo.path();
    assert!(affected(dir).is_empty(), "nothing changed yet");

    let out = imgbuild(
        dir,
        &[
            "matrix",
            "set",
            "rocky-9.5-compute",
            "mofed_version=25.01-0.6.0.0",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(affected(dir), ["rocky-9.5-compute"]);
    let json = imgbuild(dir, &["--json", "affected", "--since", "HEAD"]);
    let parsed: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let one = serde_json::json!({"include": [{"image": "rocky-9.5-compute"}]});
    assert_eq!(parsed["include"], one["include"]);
    // One image shares with no other: it builds at once.
    assert_eq!(parsed["shared"], serde_json::json!([]));
    assert_eq!(parsed["first"], serde_json::json!({"include": []}));
    assert_eq!(parsed["then"], one);
    git(dir, &["checkout", "-q", "--", "."]);

    // Every image uses the mofed role; main.yml is read by all of them.
    append(&dir.join("roles/mofed/tasks/main.yml"), "# touched\n");
    assert_eq!(affected(dir), all_images(dir));
    git(dir, &["checkout", "-q", "--", "."]);

    // Rocky.yml is included only where ansible_distribution is Rocky.
    append(&dir.join("roles/mofed/tasks/Rocky.yml"), "# touched\n");
    let rocky: Vec<String> = all_images(dir)
        .into_iter()
        .filter(|i| i.starts_with("rocky-"))
        .collect();
    assert_eq!(affected(dir), rocky);
    git(dir, &["checkout", "-q", "--", "."]);

    // A role no recipe uses, and a new file in it.
    append(&dir.join("roles/softroce/tasks/main.yml"), "# touched\n");
    std::fs::write(dir.join("roles/softroce/tasks/extra.yml"), "[]\n").expect("write");
    assert!(affected(dir).is_empty());
    git(dir, &["checkout", "-q", "--", "."]);
    git(dir, &["clean", "-qfd"]);

    append(&dir.join("mirror.toml"), "# another comment\n");
    assert_eq!(affected(dir), all_images(dir));
    git(dir, &["checkout", "-q", "--", "."]);

    // A deleted role file counts for the images that read it at the revision.
    std::fs::remove_file(dir.join("roles/mofed/tasks/Ubuntu.yml")).expect("rm");
    let ubuntu: Vec<String> = all_images(dir)
        .into_iter()
        .filter(|i| i.starts_with("ubuntu-"))
        .collect();
    assert_eq!(affected(dir), ubuntu);
    git(dir, &["checkout", "-q", "--", "."]);

    // The empty tree (what CI compares with on a new branch): every image.
    let empty = git(dir, &["hash-object", "-t", "tree", "/dev/null"]);
    let out = imgbuild(dir, &["affected", "--since", empty.trim()]);
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), all_images(dir));

    let bad = imgbuild(dir, &["affected", "--since", "no-such-rev"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("'no-such-rev' is not a commit or tree"),
        "{}",
        stderr(&bad)
    );
}

/// `recipe`'s roles, in order (one `- name` line each under `roles:`).
fn roles_of(recipe: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(recipe).expect("recipe");
    let roles = text.split("  roles:\n").nth(1).expect("roles");
    roles
        .lines()
        .map_while(|l| l.strip_prefix("    - "))
        .map(str::to_owned)
        .collect()
}

/// A copy of `image`'s recipe as `name`, with `roles` added at its end.
fn variant(dir: &Path, image: &str, name: &str, roles: &[&str]) {
    let text = std::fs::read_to_string(dir.join(format!("images/{image}.yml"))).expect("recipe");
    let mut text = text
        .replace(&format!("name: {image}.yml"), &format!("name: {name}.yml"))
        .replace(
            &format!("image_name: \"{image}\""),
            &format!("image_name: \"{name}\""),
        );
    for role in roles {
        text.push_str(&format!("    - {role}\n"));
    }
    std::fs::write(dir.join(format!("images/{name}.yml")), text).expect("write");
}

fn fan_out(dir: &Path) -> serde_json::Value {
    let empty = git(dir, &["hash-object", "-t", "tree", "/dev/null"]);
    let out = imgbuild(dir, &["--json", "affected", "--since", empty.trim()]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("json")
}

fn images_of(matrix: &serde_json::Value) -> Vec<String> {
    matrix["include"]
        .as_array()
        .expect("include")
        .iter()
        .map(|i| i["image"].as_str().expect("image").to_owned())
        .collect()
}

#[test]
fn affected_fans_out_images_that_share_layers() {
    let repo = project_repo();
    let dir = repo.path();
    let image = "rocky-8.10-compute";
    let roles = roles_of(&dir.join(format!("images/{image}.yml")));
    variant(dir, image, "rocky-8.10-rdma", &["rdma_tuning"]);
    variant(dir, image, "rocky-8.10-roce", &["softroce"]);
    let fan = fan_out(dir);
    // The three share the base and every role of the compute image's recipe.
    let three = ["rocky-8.10-compute", "rocky-8.10-rdma", "rocky-8.10-roce"];
    let shared = fan["shared"]
        .as_array()
        .expect("shared")
        .iter()
        .find(|s| s["images"] == serde_json::json!(three))
        .unwrap_or_else(|| panic!("no stage shared by {three:?}: {fan:#}"));
    let mut layers = vec!["base".to_owned()];
    layers.extend(roles.iter().cloned());
    assert_eq!(shared["layers"], serde_json::json!(layers), "{fan:#}");
    // One of them goes first, the other two after it; every image is in one of the two.
    let (first, then) = (images_of(&fan["first"]), images_of(&fan["then"]));
    assert_eq!(
        three
            .iter()
            .filter(|i| first.contains(&i.to_string()))
            .count(),
        1,
        "{fan:#}"
    );
    let mut all = [first, then].concat();
    all.sort();
    assert_eq!(all, images_of(&fan), "{fan:#}");

    // A variant whose MOFED differs shares only the layers below the mofed role.
    variant(dir, image, "rocky-8.10-mofed", &[]);
    let out = imgbuild(
        dir,
        &[
            "matrix",
            "set",
            "rocky-8.10-mofed",
            "mofed_version=24.10-2.1.8.0",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let fan = fan_out(dir);
    let below_mofed: Vec<&String> = layers.iter().take_while(|l| *l != "mofed").collect();
    let four = serde_json::json!([
        "rocky-8.10-compute",
        "rocky-8.10-mofed",
        "rocky-8.10-rdma",
        "rocky-8.10-roce"
    ]);
    let shared = fan["shared"]
        .as_array()
        .expect("shared")
        .iter()
        .find(|s| s["images"] == four)
        .unwrap_or_else(|| panic!("no stage shared by the four: {fan:#}"));
    assert_eq!(shared["layers"], serde_json::json!(below_mofed), "{fan:#}");
}

#[test]
fn affected_follows_the_pins_an_image_uses() {
    let repo = project_repo();
    let dir = repo.path();
    let pin = |sha: char| {
        format!(
            "[[artifact]]\npath = \"/mellanox/debian12/MLNX_OFED_LINUX-24.10-2.1.8.0-debian12-x86_64.tgz\"\nsize = 10\nsha256 = \"{}\"\n\n[[artifact]]\npath = \"/unused/thing.tgz\"\nsize = 1\nsha256 = \"{}\"\n",
            sha.to_string().repeat(64),
            "c".repeat(64)
        )
    };
    std::fs::write(dir.join("mirror.lock"), pin('a')).expect("write");
    git(dir, &["add", "mirror.lock"]);
    git(dir, &["commit", "-q", "-m", "lock"]);
    std::fs::write(dir.join("mirror.lock"), pin('b')).expect("write");
    assert_eq!(affected(dir), ["debian-12-compute"]);
    std::fs::write(
        dir.join("mirror.lock"),
        pin('a').replace(&"c".repeat(64), &"d".repeat(64)),
    )
    .expect("write");
    assert!(affected(dir).is_empty(), "a pin no image uses");
}

#[test]
fn matrix_set_changes_one_line_per_value_and_round_trips() {
    let repo = project_repo();
    let dir = repo.path();
    for image in all_images(dir) {
        let recipe = dir.join(format!("images/{image}.yml"));
        let original = std::fs::read(&recipe).expect("read");
        let sets = [
            "kernel_version=9.9.9-test",
            "mofed_version=99.1-0.0.0.0",
            "nvidia_version=999.1.2",
        ];
        let out = imgbuild(dir, &[&["matrix", "set", &image][..], &sets[..]].concat());
        assert!(out.status.success(), "{image}: {}", stderr(&out));
        let numstat = git(
            dir,
            &["diff", "--numstat", "--", &format!("images/{image}.yml")],
        );
        assert_eq!(
            numstat.trim(),
            format!("3\t3\timages/{image}.yml"),
            "{image}"
        );
        let rows = imgbuild(dir, &["--json", "matrix"]);
        let rows: serde_json::Value = serde_json::from_slice(&rows.stdout).expect("json");
        let row = rows
            .as_array()
            .and_then(|r| r.iter().find(|r| r["image"] == image.as_str()))
            .expect("row");
        assert_eq!(row["kernel"], "9.9.9-test");
        assert_eq!(row["mofed"], "99.1-0.0.0.0");
        assert_eq!(row["nvidia"], "999.1.2");

        let diff = imgbuild(dir, &["matrix", "--diff", "HEAD", "--format", "markdown"]);
        assert!(diff.status.success(), "{}", stderr(&diff));
        assert!(
            stdout(&diff).contains("3 cells changed, 1 of 7 images differ from HEAD"),
            "{}",
            stdout(&diff)
        );

        let back: Vec<String> = ["kernel_version", "mofed_version", "nvidia_version"]
            .iter()
            .map(|var| {
                let before = row_of_head(dir, &image, var);
                format!("{var}={before}")
            })
            .collect();
        let back: Vec<&str> = back.iter().map(String::as_str).collect();
        let out = imgbuild(dir, &[&["matrix", "set", &image][..], &back[..]].concat());
        assert!(out.status.success(), "{image}: {}", stderr(&out));
        assert_eq!(std::fs::read(&recipe).expect("read"), original, "{image}");
    }
}

/// The value of a recipe variable at HEAD, read with a YAML parser.
fn row_of_head(dir: &Path, image: &str, var: &str) -> String {
    let text = git(dir, &["show", &format!("HEAD:images/{image}.yml")]);
    let doc = registry::yaml::parse(&text).expect("yaml");
    match &doc[0]["vars"][var] {
        serde_json::Value::String(s) => s.clone(),
        other => panic!("{image} {var}: {other:?}"),
    }
}

#[test]
fn matrix_set_refuses_unknown_images_and_variables_untouched() {
    let repo = project_repo();
    let dir = repo.path();
    let out = imgbuild(
        dir,
        &[
            "matrix",
            "set",
            "rocky-9.5-compute",
            "mofed_version=1",
            "mofed_verison=2",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("did you mean 'mofed_version'"),
        "{}",
        stderr(&out)
    );
    let out = imgbuild(
        dir,
        &["matrix", "set", "rocky-9.6-compute", "mofed_version=1"],
    );
    assert_eq!(out.status.code(), Some(2));
    let out = imgbuild(
        dir,
        &["matrix", "set", "rocky-9.5-compute", "mofed_version"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        git(dir, &["status", "--porcelain"]).is_empty(),
        "files untouched"
    );

    let out = imgbuild(
        dir,
        &[
            "matrix",
            "set",
            "--all-images",
            "--where",
            "mofed_version=23.10-5.1.4.0",
            "mofed_version=24.10-2.1.8.0",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        git(dir, &["diff", "--name-only"]).trim(),
        "images/rocky-8.10-compute.yml"
    );
}

#[test]
fn mirror_check_and_lock_against_a_loopback_mirror() {
    let repo = project_repo();
    let dir = repo.path();
    let mirror = tempfile::tempdir().expect("mirror");
    let nvidia = mirror
        .path()
        .join("nvidia/NVIDIA-Linux-x86_64-580.65.06.run");
    std::fs::create_dir_all(nvidia.parent().expect("parent")).expect("mkdir");
    std::fs::write(&nvidia, b"#!/bin/sh\necho stand-in\n").expect("write");
    let url = serve_dir(mirror.path());
    let cache = tempfile::tempdir().expect("cache");
    let env = [("IMGBUILD_CACHE", cache.path())];

    let check = imgbuild(
        dir,
        &["mirror", "check", "rocky-9.5-compute", "--mirror", &url],
    );
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    let table = stdout(&check);
    let columns = |needle: &str| -> Vec<String> {
        table
            .lines()
            .find(|l| l.contains(needle) && !l.contains("HTTP"))
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        columns("MLNX_OFED_LINUX-24.10-2.1.8.0-rhel9.5"),
        ["MISSING", "no", "-"],
        "{table}"
    );
    assert_eq!(columns("NVIDIA-Linux"), ["ok", "no", "24"], "{table}");
    assert!(table.contains("HTTP 404"), "{table}");

    let lock = imgbuild_env(
        dir,
        &["mirror", "lock", "rocky-9.5-compute", "--mirror", &url],
        &env,
    );
    assert_eq!(
        lock.status.code(),
        Some(1),
        "the missing one cannot be pinned"
    );
    let text = std::fs::read_to_string(dir.join("mirror.lock")).expect("lock written");
    let sha = Command::new("sha256sum")
        .arg(&nvidia)
        .output()
        .expect("sha256sum");
    let sha = stdout(&sha)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    assert!(
        text.contains(&format!(
            "path = \"/nvidia/NVIDIA-Linux-x86_64-580.65.06.run\"\nsize = 24\nsha256 = \"{sha}\""
        )),
        "{text}"
    );
    assert!(!text.contains("MLNX_OFED"), "{text}");

    // The rest of what the image downloads: MOFED, and the packages dnf installs by URL.
    for missing in [
        "mellanox/rocky9/MLNX_OFED_LINUX-24.10-2.1.8.0-rhel9.5-x86_64.tgz",
        "nhc/lbnl-nhc-1.4.3-1.el9.noarch.rpm",
        "warewulf/el9/warewulf-dracut-4.6.1-1.el9.noarch.rpm",
    ] {
        let file = mirror.path().join(missing);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, b"not really a package").expect("write");
    }
    let lock = imgbuild_env(
        dir,
        &["mirror", "lock", "rocky-9.5-compute", "--mirror", &url],
        &env,
    );
    assert!(lock.status.success(), "{}", stderr(&lock));
    let check = imgbuild(
        dir,
        &[
            "--json",
            "mirror",
            "check",
            "rocky-9.5-compute",
            "--mirror",
            &url,
        ],
    );
    assert_eq!(check.status.code(), Some(0), "{}", stdout(&check));
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).expect("json");
    assert_eq!(report["ok"], true);
    assert!(report["artifacts"]
        .as_array()
        .is_some_and(|a| a.len() == 4 && a.iter().all(|x| x["pinned"] == true)));

    // The file changes on the mirror: its size no longer matches the pin.
    std::fs::write(&nvidia, b"a different build\n").expect("write");
    let check = imgbuild(
        dir,
        &["mirror", "check", "rocky-9.5-compute", "--mirror", &url],
    );
    assert_eq!(check.status.code(), Some(1));
    assert!(
        stdout(&check).contains("mirror.lock pins 24"),
        "{}",
        stdout(&check)
    );
}

/// docs/images.md's image table is what `imgbuild matrix --format markdown` prints for the
/// project: the page changes with the recipes, in the same pull request.
#[test]
fn the_images_page_shows_the_projects_matrix() {
    let out = imgbuild(&repo_root(), &["matrix", "--format", "markdown"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(repo_root().join("docs/images.md")).expect("images.md");
    let start = page
        .find("<!-- image matrix:")
        .and_then(|at| page[at..].find('\n').map(|end| at + end + 1))
        .expect("the matrix's start marker");
    let end = page
        .find("<!-- end image matrix -->")
        .expect("its end marker");
    assert_eq!(
        &page[start..end],
        stdout(&out),
        "docs/images.md's image table is out of date: put the output of `imgbuild matrix --format markdown` between its markers"
    );
}
