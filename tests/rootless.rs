//! Rootless builds (issue 56): an ordinary user with a subordinate id range builds the same
//! image as root, byte for byte, and the machines and folders that cannot are refused with
//! what fixes them, before any work. Needs root (to make the users and their ranges, as an
//! administrator does), `newuidmap`/`newgidmap` (Debian's uidmap) and debootstrap, as CI has.

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Mutex;

use common::*;
use sha2::{Digest, Sha256};

/// The user who builds, with a subordinate range of 65536 ids.
const BUILDER: &str = "imgbuild-rootless";
/// Its range in `/etc/subuid` and `/etc/subgid` (clear of useradd's default 100000 and up).
const RANGE: &str = "3000000:65536";
/// A user with no range.
const NO_RANGE: &str = "imgbuild-norange";

/// One test at a time edits the user database.
static USERS: Mutex<()> = Mutex::new(());

/// Makes `name` a system user, with `range` in the subordinate id files (if given and not there).
fn user(name: &str, range: Option<&str>) -> u32 {
    let _one = USERS.lock().unwrap_or_else(|e| e.into_inner());
    let exists = Command::new("id").arg("-u").arg(name).output().expect("id");
    if !exists.status.success() {
        let made = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                name,
            ])
            .status()
            .expect("useradd");
        assert!(made.success(), "useradd {name}");
    }
    if let Some(range) = range {
        for file in ["/etc/subuid", "/etc/subgid"] {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            if !text.lines().any(|l| l.starts_with(&format!("{name}:"))) {
                std::fs::write(file, format!("{text}{name}:{range}\n")).expect("subordinate ids");
            }
        }
    }
    let id = Command::new("id").arg("-u").arg(name).output().expect("id");
    stdout(&id).trim().parse().expect("a uid")
}

/// A docker-archive of the debootstrapped bookworm base (its /dev devices too), made once.
fn base_archive() -> PathBuf {
    let cached = test_cache().join("rootless-base-1.tar");
    let _lock = cache_lock("rootless-base-1");
    if cached.is_file() {
        return cached;
    }
    let tree = debootstrapped("bookworm-minbase", None);
    let work = tempfile::tempdir_in(test_cache()).expect("work");
    let layer = work.path().join("layer.tar");
    let tarred = Command::new("tar")
        .args(["--numeric-owner", "--xattrs", "--sort=name", "-C"])
        .arg(&tree)
        .arg("-cf")
        .arg(&layer)
        .arg(".")
        .status()
        .expect("tar");
    assert!(tarred.success(), "tar of the base");
    let diff_id = format!(
        "sha256:{:x}",
        Sha256::digest(std::fs::read(&layer).expect("layer"))
    );
    let config = serde_json::json!({
        "architecture": "amd64", "os": "linux", "config": {},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "debootstrap --variant=minbase bookworm (a test's base)"}],
    });
    let config = serde_json::to_vec(&config).expect("config");
    let config_name = format!("{:x}.json", Sha256::digest(&config));
    std::fs::write(work.path().join(&config_name), &config).expect("config");
    let manifest = serde_json::json!([
        {"Config": config_name, "RepoTags": ["base:latest"], "Layers": ["layer.tar"]}
    ]);
    std::fs::write(work.path().join("manifest.json"), manifest.to_string()).expect("manifest");
    let partial = cached.with_extension("tar.partial");
    let archived = Command::new("tar")
        .arg("-C")
        .arg(work.path())
        .arg("-cf")
        .arg(&partial)
        .args(["manifest.json", &config_name, "layer.tar"])
        .status()
        .expect("tar");
    assert!(archived.success(), "the docker-archive");
    std::fs::rename(&partial, &cached).expect("cache the base");
    cached
}

/// A work folder the users can reach, with the images fixture project and the base in it.
struct Setup {
    work: tempfile::TempDir,
    project: PathBuf,
}

fn setup() -> Setup {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-rootless-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    std::fs::set_permissions(work.path(), PermissionsExt::from_mode(0o755)).expect("chmod");
    let project = work.path().join("project");
    copy_fixture("images", &project);
    std::fs::hard_link(base_archive(), project.join("base.tar"))
        .or_else(|_| std::fs::copy(base_archive(), project.join("base.tar")).map(|_| ()))
        .expect("the base");
    Setup { work, project }
}

/// Makes `user` the owner of `paths` (`chown` with `options`).
fn give_to(user: &str, options: &[&str], paths: &[&std::path::Path]) {
    let owned = Command::new("chown")
        .args(options)
        .args([&format!("{user}:"), "--"])
        .args(paths)
        .status()
        .expect("chown");
    assert!(owned.success(), "chown {paths:?}");
}

/// imgbuild, run as `user`.
fn imgbuild_of(user: &str) -> Command {
    let mut command = Command::new("runuser");
    command.args(["-u", user, "--", env!("CARGO_BIN_EXE_imgbuild")]);
    command
}

/// Runs imgbuild as `user` (root when `None`) with its own cache and output folders below the
/// work folder, owned by it.
fn imgbuild_as(s: &Setup, user: Option<&str>, name: &str, args: &[&str]) -> Output {
    let home = s.work.path().join(name);
    std::fs::create_dir_all(&home).expect("home");
    let mut command = match user {
        Some(user) => {
            give_to(user, &["-R"], &[&home, &s.project]);
            imgbuild_of(user)
        }
        None => Command::new(env!("CARGO_BIN_EXE_imgbuild")),
    };
    command
        .arg("-C")
        .arg(&s.project)
        .args(args)
        .env("HOME", &home)
        .env("IMGBUILD_CACHE", home.join("cache"))
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("imgbuild")
}

fn build_as(s: &Setup, user: Option<&str>, name: &str) -> (Output, PathBuf) {
    let out = s.work.path().join(name).join("out");
    let out_arg = out.display().to_string();
    let args = [
        "--json",
        "build",
        "rootless-test",
        "--no-verify",
        "--out",
        &out_arg,
    ];
    (imgbuild_as(s, user, name, &args), out)
}

#[test]
fn an_ordinary_user_builds_the_image_root_builds() {
    let s = setup();
    let uid = user(BUILDER, Some(RANGE));
    let (as_root, _) = build_as(&s, None, "root");
    let as_root = built_event(&as_root);
    let (as_user, out) = build_as(&s, Some(BUILDER), "user");
    let as_user = built_event(&as_user);
    assert_eq!(
        as_user["manifest"], as_root["manifest"],
        "the rootless build's manifest (every layer's digest) is root's"
    );
    // What the user gets is the user's own; nothing stays mounted.
    let owner = std::fs::metadata(out.join("rootless-test/rootless-test.tar")).expect("archive");
    assert_eq!(owner.uid(), uid, "the docker-archive belongs to the user");
    assert_eq!(mounted_below(s.work.path()), Vec::<String>::new());
    // The cache's trees hold the image's ids, which only the namespace can remove: prune runs
    // there too.
    let pruned = imgbuild_as(&s, Some(BUILDER), "user", &["cache", "prune"]);
    assert!(pruned.status.success(), "cache prune: {}", stderr(&pruned));
    let (again, _) = build_as(&s, Some(BUILDER), "user");
    assert_eq!(built_event(&again)["manifest"], as_root["manifest"]);
}

#[test]
fn a_user_without_a_range_or_with_a_foreign_cache_is_refused_before_any_work() {
    let s = setup();
    user(NO_RANGE, None);
    let (refused, out) = build_as(&s, Some(NO_RANGE), "norange");
    let message = stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{message}");
    assert!(
        message.contains(&format!("{NO_RANGE} has 0 subordinate ids in /etc/subuid"))
            && message.contains("usermod --add-subuids"),
        "the refusal names the file and the fix: {message}"
    );
    assert!(!out.exists(), "nothing written");
    user(BUILDER, Some(RANGE));
    // A cache folder of root's: refused, never chowned.
    let foreign = s.work.path().join("foreign-cache");
    std::fs::create_dir_all(&foreign).expect("cache");
    let refused = imgbuild_of(BUILDER)
        .arg("-C")
        .arg(&s.project)
        .args(["build", "rootless-test", "--no-verify"])
        .env("IMGBUILD_CACHE", &foreign)
        .output()
        .expect("imgbuild");
    let message = stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{message}");
    assert!(message.contains("belongs to uid 0"), "{message}");
    assert_eq!(std::fs::metadata(&foreign).expect("cache").uid(), 0);
    assert_eq!(
        std::fs::read_dir(&foreign).expect("cache").count(),
        0,
        "nothing written in it"
    );
    // Planning needs no namespace and no range.
    let plan = imgbuild_of(NO_RANGE)
        .arg("-C")
        .arg(&s.project)
        .args(["plan", "rootless-test"])
        .output()
        .expect("imgbuild");
    assert!(plan.status.success(), "plan: {}", stderr(&plan));
}

/// The entries below `dev/` of the `index`th layer of the image in the OCI layout `oci`, as
/// `tar -tv` lists them (type, mode, owner, device numbers or link target).
fn dev_entries(oci: &std::path::Path, index: usize) -> Vec<String> {
    let layer = layer_blob(oci, index);
    let listing = Command::new("tar")
        .args(["--numeric-owner", "-tvf"])
        .arg(&layer)
        .output()
        .expect("tar");
    assert!(listing.status.success(), "tar -tvf {}", layer.display());
    stdout(&listing)
        .lines()
        .filter(|l| l.contains(" dev/"))
        .map(|l| {
            // Mode, owner, size or device, then the date and time, then the name.
            let fields: Vec<&str> = l.split_whitespace().collect();
            let name_at = fields
                .iter()
                .position(|f| f.starts_with("dev/"))
                .unwrap_or(0);
            let mut kept: Vec<&str> = fields[..3].to_vec();
            kept.extend_from_slice(&fields[name_at..]);
            kept.join(" ")
        })
        .collect()
}

/// The blob of the `index`th layer of the image in the OCI layout `oci`.
fn layer_blob(oci: &std::path::Path, index: usize) -> PathBuf {
    let read = |path: PathBuf| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("JSON")
    };
    let blob = |digest: &str| {
        oci.join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"))
    };
    let index_json = read(oci.join("index.json"));
    let manifest = read(blob(
        index_json["manifests"][0]["digest"]
            .as_str()
            .expect("manifest"),
    ));
    blob(manifest["layers"][index]["digest"].as_str().expect("layer"))
}

#[test]
fn a_debootstrap_base_made_rootless_holds_the_devices_roots_holds() {
    let s = setup();
    user(BUILDER, Some(RANGE));
    // The user's cache stays in the test cache, so that debootstrap runs once, not every run.
    let cache = test_cache().join("rootless-user-cache-1");
    std::fs::create_dir_all(&cache).expect("cache");
    // Only the folder: what is in it belongs to the user's subordinate ids.
    give_to(BUILDER, &[], &[&cache]);
    let out = s.work.path().join("user-out");
    std::fs::create_dir_all(&out).expect("out");
    give_to(BUILDER, &["-R"], &[&out, &s.project]);
    let rootless = imgbuild_of(BUILDER)
        .arg("-C")
        .arg(&s.project)
        .args(["--json", "build", "repro-test", "--no-verify", "--out"])
        .arg(&out)
        .env("IMGBUILD_CACHE", &cache)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("imgbuild");
    built_event(&rootless);
    // Root's build of the same recipe, from the image tests' shared debootstrapped base.
    let root_cache = s.work.path().join("root-cache");
    shared_base_cache(&root_cache);
    let root_out = s.work.path().join("root-out");
    let as_root = imgbuild_env(
        &s.project,
        &[
            "--json",
            "build",
            "repro-test",
            "--no-verify",
            "--out",
            &root_out.display().to_string(),
        ],
        &[
            ("IMGBUILD_CACHE", &root_cache),
            ("SOURCE_DATE_EPOCH", std::path::Path::new("1700000000")),
        ],
    );
    built_event(&as_root);
    let oci = |out: &std::path::Path| out.join("repro-test/oci");
    let devices = dev_entries(&oci(&out), 0);
    assert!(
        devices
            .iter()
            .any(|d| d.starts_with("crw-rw-rw- 0/0 1,3 dev/null")),
        "/dev/null a character device 1,3: {devices:#?}"
    );
    assert_eq!(devices, dev_entries(&oci(&root_out), 0), "root's /dev");
    // Two debootstraps differ in their logs' times, but the role's layer above is the same.
    assert_eq!(
        std::fs::read(layer_blob(&oci(&out), 1)).expect("layer"),
        std::fs::read(layer_blob(&oci(&root_out), 1)).expect("layer"),
        "the role's layer, byte for byte"
    );
}

/// The host folder a role tries to reach (`roles/escape`): a file of root's anyone may read,
/// a secret in a folder only root may enter, and a folder of the building user's.
fn host_folder(s: &Setup) -> PathBuf {
    let host = s.work.path().join("host");
    std::fs::create_dir_all(host.join("root-only")).expect("host folder");
    std::fs::create_dir_all(host.join("user-owned")).expect("host folder");
    std::fs::write(host.join("root-file"), "root's file\n").expect("root-file");
    std::fs::write(host.join("root-only/secret"), "root's secret\n").expect("secret");
    std::fs::set_permissions(
        host.join("root-only/secret"),
        PermissionsExt::from_mode(0o600),
    )
    .expect("chmod");
    std::fs::set_permissions(host.join("root-only"), PermissionsExt::from_mode(0o700))
        .expect("chmod");
    give_to(BUILDER, &[], &[&host.join("user-owned")]);
    host
}

#[test]
fn a_role_trying_to_leave_its_root_reaches_only_what_the_user_could() {
    let s = setup();
    let uid = user(BUILDER, Some(RANGE));
    let host = host_folder(&s);
    let out = s.work.path().join("escape").join("out");
    let host_dir = format!("host_dir={}", host.display());
    let out_arg = out.display().to_string();
    let built = imgbuild_as(
        &s,
        Some(BUILDER),
        "escape",
        &[
            "--json",
            "build",
            "rootless-escape",
            "--no-verify",
            "--format",
            "oci",
            "-e",
            &host_dir,
            "--out",
            &out_arg,
        ],
    );
    built_event(&built);
    // Root's files are as they were: no way out wrote them or read the secret.
    let read = |path: &str| std::fs::read_to_string(host.join(path)).expect("host file");
    assert_eq!(read("root-file"), "root's file\n");
    assert_eq!(read("root-only/secret"), "root's secret\n");
    let oci = ["rootless-escape/oci", "rootless-escape"]
        .iter()
        .map(|sub| out.join(sub))
        .find(|dir| dir.join("index.json").is_file())
        .expect("an OCI layout");
    let role_layer = layer_blob(&oci, 1);
    let kept = Command::new("tar")
        .args(["-xOf"])
        .arg(&role_layer)
        .arg("what-the-role-read")
        .output()
        .expect("tar");
    let what_it_read = stdout(&kept);
    assert!(
        !what_it_read.contains("root's secret"),
        "the secret reached the image: {what_it_read}"
    );
    // The chroot was left (a root inside the namespace may chroot), into the host's tree: what
    // it wrote there is only where the user may write, and the user's own.
    assert!(
        what_it_read.contains("landed in the host tree"),
        "{what_it_read}"
    );
    let marker = host.join("user-owned/marker");
    assert_eq!(read("user-owned/marker"), "the user could\n");
    assert_eq!(std::fs::metadata(&marker).expect("marker").uid(), uid);
    assert_eq!(mounted_below(s.work.path()), Vec::<String>::new());
}
