//! The role engine end to end (issue: role engine): every module run through the chroot sandbox
//! in a debootstrapped Debian bookworm rootfs, twice, and a build killed with SIGKILL.
//! Needs root and debootstrap, as CI has; the rootfs is cached outside the repository.

use crate::common;

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// Task name → (status, ignored) from `--json` events (the last event of each name wins).
fn statuses(stdout: &str) -> HashMap<String, (String, bool)> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "task_end")
        .map(|e| {
            let name = e["task"].as_str().unwrap_or_default().to_owned();
            (
                name,
                (
                    e["status"].as_str().unwrap_or_default().to_owned(),
                    e["ignored"].as_bool().unwrap_or(false),
                ),
            )
        })
        .collect()
}

fn chroot_out(root: &Path, args: &[&str]) -> String {
    let out = Command::new("chroot")
        .arg(root)
        .args(args)
        .output()
        .expect("chroot");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn read(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path.trim_start_matches('/')))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// (task, first run, second run): the `changed` behaviour of each task.
const EXPECTED: &[(&str, &str, &str)] = &[
    ("folder", "changed", "ok"),
    ("copy content", "changed", "ok"),
    ("copy file", "changed", "ok"),
    ("copy folder", "changed", "ok"),
    ("template", "changed", "ok"),
    ("seed sshd config", "changed", "ok"),
    ("lineinfile regexp", "changed", "ok"),
    ("lineinfile create", "changed", "ok"),
    ("blockinfile", "changed", "ok"),
    ("symlink", "changed", "ok"),
    ("hard link", "changed", "ok"),
    ("remove motd", "changed", "ok"),
    // Matched with ansible-playbook (chroot connection): touch on an existing file reports a change.
    ("touch", "changed", "changed"),
    ("group", "changed", "ok"),
    ("user", "changed", "ok"),
    ("owner", "changed", "ok"),
    ("command registered", "ok", "ok"),
    // Matched with ansible-playbook (tests/fixtures/ansible-diff command_shell): a command that
    // `creates` says not to run is ok (rc 0, stdout "skipped, since ... exists"), not skipped.
    ("shell with creates", "changed", "ok"),
    (
        "uname answers with the pinned kernel, for build steps that ask it",
        "changed",
        "ok",
    ),
    ("package present", "changed", "ok"),
    ("package absent", "ok", "ok"),
    ("unit", "changed", "ok"),
    ("enable unit", "changed", "ok"),
    ("disable unit from the base", "changed", "ok"),
    ("stat", "ok", "ok"),
    ("assert on results", "ok", "ok"),
    ("download", "changed", "ok"),
    // /tmp is fresh for every role run, so the archive is fetched (from the cache) again.
    ("fetch archive", "changed", "changed"),
    ("unarchive", "changed", "ok"),
    ("script", "changed", "changed"),
    ("set fact", "ok", "ok"),
    ("use fact", "changed", "ok"),
    ("loop with register", "ok", "ok"),
    ("loop results", "changed", "ok"),
    ("fails", "failed", "failed"),
    ("rescued", "changed", "ok"),
    ("always", "changed", "ok"),
    ("ignored failure", "failed", "failed"),
];

#[test]
fn every_module_runs_in_a_debian_rootfs_and_reports_changes_honestly() {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-engine-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let root = work.path().join("root");
    bookworm_rootfs(&root);
    let files = work.path().join("mirror/files");
    std::fs::create_dir_all(files.join("bundle")).expect("mkdir");
    std::fs::write(files.join("payload.txt"), "payload\n").expect("payload");
    std::fs::write(files.join("bundle/inner.txt"), "inner\n").expect("inner");
    let tar = Command::new("tar")
        .args(["czf", "bundle.tar.gz", "bundle"])
        .current_dir(&files)
        .status()
        .expect("tar");
    assert!(tar.success());
    let url = serve_dir(&work.path().join("mirror"));
    let project = work.path().join("project");
    copy_fixture("engine", &project);
    let cache = work.path().join("cache");
    let root_arg = root.to_string_lossy().into_owned();
    let args = [
        "--json",
        "apply",
        "engine-test",
        "--root",
        &root_arg,
        "--mirror",
        &url,
    ];

    let first = imgbuild_env(&project, &args, &[("IMGBUILD_CACHE", &cache)]);
    assert!(
        first.status.success(),
        "first run failed: {}",
        stderr(&first)
    );
    let first_status = statuses(&stdout(&first));
    let second = imgbuild_env(&project, &args, &[("IMGBUILD_CACHE", &cache)]);
    assert!(
        second.status.success(),
        "second run failed: {}",
        stderr(&second)
    );
    let second_status = statuses(&stdout(&second));
    let mut wrong = Vec::new();
    for (task, want_first, want_second) in EXPECTED {
        let got_first = first_status
            .get(*task)
            .map(|s| s.0.as_str())
            .unwrap_or("missing");
        let got_second = second_status
            .get(*task)
            .map(|s| s.0.as_str())
            .unwrap_or("missing");
        if (got_first, got_second) != (*want_first, *want_second) {
            wrong.push(format!(
                "{task}: got {got_first}/{got_second}, want {want_first}/{want_second}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "changed reported wrongly:\n{}",
        wrong.join("\n")
    );
    assert!(
        first_status["ignored failure"].1,
        "ignore_errors marks the failure ignored"
    );
    assert_eq!(
        first_status.get("app changed").map(|s| s.0.as_str()),
        Some("changed"),
        "the handler runs when notified"
    );
    assert!(
        !second_status.contains_key("app changed"),
        "and not when nothing notified it"
    );

    // Files, links, owners, packages, users, units.
    let meta = |p: &str| {
        std::fs::symlink_metadata(root.join(p.trim_start_matches('/')))
            .unwrap_or_else(|e| panic!("{p}: {e}"))
    };
    assert_eq!(meta("/srv/t").mode() & 0o7777, 0o750);
    assert_eq!(read(&root, "/srv/t/content.txt"), "hello engine-test\n");
    assert_eq!(
        (
            meta("/srv/t/content.txt").uid(),
            meta("/srv/t/content.txt").gid()
        ),
        (1600, 1600)
    );
    assert_eq!(meta("/srv/t/static.conf").mode() & 0o7777, 0o640);
    assert_eq!(read(&root, "/srv/t/tree/sub/two.txt"), "two\n");
    assert_eq!(
        read(&root, "/srv/t/app.conf"),
        "listen = 8080\nhost = engine-test\n"
    );
    assert_eq!(
        read(&root, "/srv/t/sshd_config"),
        "Port 22\nPermitRootLogin no\n"
    );
    assert_eq!(read(&root, "/srv/t/lines.txt"), "a=1\n");
    assert_eq!(
        read(&root, "/srv/t/block.txt"),
        "# BEGIN ANSIBLE MANAGED BLOCK\nx = 1\ny = 2\n# END ANSIBLE MANAGED BLOCK\n"
    );
    assert_eq!(
        std::fs::read_link(root.join("srv/t/link")).expect("link"),
        Path::new("app.conf")
    );
    assert_eq!(meta("/srv/t/hard").ino(), meta("/srv/t/static.conf").ino());
    assert!(!root.join("etc/motd").exists());
    assert!(chroot_out(
        &root,
        &["dpkg-query", "-W", "-f=${db:Status-Abbrev}", "less"]
    )
    .starts_with("ii"));
    assert!(read(&root, "/etc/passwd")
        .lines()
        .any(|l| l == "tester:x:1600:1600:Test user:/home/tester:/bin/bash"));
    assert!(read(&root, "/etc/group")
        .lines()
        .any(|l| l.starts_with("tester:x:1600:")));
    assert_eq!(
        std::fs::read_link(root.join("etc/systemd/system/multi-user.target.wants/tester.service"))
            .expect("wants link"),
        Path::new("/etc/systemd/system/tester.service")
    );
    assert!(root
        .join("etc/systemd/system/tester-alias.service")
        .is_symlink());
    assert!(!root
        .join("etc/systemd/system/multi-user.target.wants/e2scrub_reap.service")
        .exists());
    assert_eq!(read(&root, "/srv/t/shell.txt"), "6.1.0-50-amd64 in /srv\n");
    assert_eq!(read(&root, "/srv/t/uname.txt"), "6.1.0-50-amd64\n1\n");
    assert!(
        !root.join("run/imgbuild").exists(),
        "the uname shim is not left in the rootfs"
    );
    assert_eq!(read(&root, "/srv/t/payload.txt"), "payload\n");
    assert_eq!(meta("/srv/t/payload.txt").mode() & 0o7777, 0o600);
    assert_eq!(read(&root, "/srv/t/bundle/inner.txt"), "inner\n");
    assert_eq!(
        read(&root, "/srv/t/script.txt"),
        "script args: first second\n"
    );
    assert_eq!(read(&root, "/srv/t/fact.txt"), "major=12\n");
    let version = read(&root, "/etc/debian_version");
    assert_eq!(
        read(&root, "/srv/t/loop.txt"),
        format!("{},extra\n", version.trim())
    );
    assert_eq!(read(&root, "/srv/t/rescued.txt"), "rescued fails\n");
    assert_eq!(read(&root, "/srv/t/always.txt"), "always\n");
    assert_eq!(read(&root, "/srv/t/handler.txt"), "handler ran\n");
    assert!(
        !root.join("tmp/bundle.tar.gz").exists(),
        "/tmp of the build stays out of the rootfs"
    );
    // The downloads are pinned in the project's mirror.lock, keyed by path.
    let lock = std::fs::read_to_string(project.join("mirror.lock")).expect("mirror.lock");
    assert!(
        lock.contains("path = \"/files/payload.txt\"")
            && lock.contains("path = \"/files/bundle.tar.gz\""),
        "{lock}"
    );
    assert!(
        mounted_below(&root).is_empty(),
        "mounts left: {:?}",
        mounted_below(&root)
    );
}

#[test]
fn check_mode_changes_nothing() {
    let (work, root, project) = engine_fixture("imgbuild-check-");
    let before = chroot_out(
        &root,
        &[
            "sh",
            "-c",
            "find / -xdev -newer /etc/os-release 2>/dev/null | wc -l",
        ],
    );
    let root_arg = root.to_string_lossy().into_owned();
    let out = imgbuild_env(
        &project,
        &[
            "--json",
            "apply",
            "sleeper",
            "--root",
            &root_arg,
            "--check",
            "-e",
            "skip_sleep=true",
        ],
        &[("IMGBUILD_CACHE", &work.path().join("cache"))],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let status = statuses(&stdout(&out));
    assert_eq!(
        status["started"].0, "changed",
        "check mode reports what would change"
    );
    assert!(
        !root.join("srv-started").exists(),
        "check mode changed a file"
    );
    assert_eq!(
        chroot_out(
            &root,
            &[
                "sh",
                "-c",
                "find / -xdev -newer /etc/os-release 2>/dev/null | wc -l"
            ]
        ),
        before
    );
}

/// A bookworm rootfs and the engine fixture project in a fresh work folder (needs root).
fn engine_fixture(prefix: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    require_root();
    let work = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let root = work.path().join("root");
    bookworm_rootfs(&root);
    let project = work.path().join("project");
    copy_fixture("engine", &project);
    (work, root, project)
}

fn processes_with(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .filter(|c| c.contains(needle))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_build_killed_with_sigkill_leaves_no_mount_and_no_process_and_reruns() {
    let (work, root, project) = engine_fixture("imgbuild-kill-");
    let root_arg = root.to_string_lossy().into_owned();
    let mut child = Command::new(env!("CARGO_BIN_EXE_imgbuild"))
        .arg("-C")
        .arg(&project)
        .args(["apply", "sleeper", "--root", &root_arg])
        .env("IMGBUILD_CACHE", work.path().join("cache"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start imgbuild");
    let deadline = Instant::now() + Duration::from_secs(60);
    while processes_with("sleep 317").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the build never reached its long command"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(root.join("srv-started").exists());
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with("sleep 317").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the build's command outlived it: {:?}",
            processes_with("sleep 317")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        mounted_below(&root).is_empty(),
        "mounts left after SIGKILL: {:?}",
        mounted_below(&root)
    );
    let rerun = imgbuild_env(
        &project,
        &[
            "apply",
            "sleeper",
            "--root",
            &root_arg,
            "-e",
            "skip_sleep=true",
        ],
        &[("IMGBUILD_CACHE", &work.path().join("cache"))],
    );
    assert!(rerun.status.success(), "rerun failed: {}", stderr(&rerun));
    assert!(root.join("srv-finished").exists());
}

#[test]
fn a_long_task_says_it_is_still_running() {
    let (work, root, project) = engine_fixture("imgbuild-heartbeat-");
    let root_arg = root.to_string_lossy().into_owned();
    let out = imgbuild_env(
        &project,
        &[
            "apply",
            "sleeper",
            "--root",
            &root_arg,
            "-e",
            "sleep_seconds=3",
        ],
        &[
            ("IMGBUILD_CACHE", &work.path().join("cache")),
            ("IMGBUILD_HEARTBEAT_SECS", Path::new("1")),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let beats: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("[sleeper] block for a long time: still running"))
        .collect();
    assert!(beats.len() >= 2, "{err}");
    // The newest line the command printed, while it runs.
    assert!(
        beats
            .last()
            .is_some_and(|l| l.ends_with("s): sleeping 3 seconds")),
        "{err}"
    );
}

/// `synchronize` without `delegate_to` pushes the role's files into the image: rsync runs in
/// the image from a copy imgbuild stages in its /tmp, modes and links kept, owned by root
/// whoever owns the checkout, and a second run changes nothing.
#[test]
fn synchronize_pushes_the_roles_files_into_the_image() {
    let (work, root, project) = engine_fixture("imgbuild-sync-");
    let keys = project.join("roles/sync_push/files/keys");
    // Git keeps no 0600 and no owner: the checkout's own.
    std::fs::set_permissions(
        keys.join("munge.key"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .expect("chmod");
    std::os::unix::fs::lchown(keys.join("munge.key"), Some(1234), Some(1234)).expect("chown");
    let cache = work.path().join("cache");
    let root_arg = root.to_string_lossy().into_owned();
    let args = ["--json", "apply", "sync-push", "--root", &root_arg];
    let first = imgbuild_env(&project, &args, &[("IMGBUILD_CACHE", &cache)]);
    assert!(first.status.success(), "{}", stderr(&first));

    let key = std::fs::symlink_metadata(root.join("etc/site-keys/munge.key")).expect("pushed");
    assert_eq!(key.mode() & 0o7777, 0o600);
    assert_eq!(
        (key.uid(), key.gid()),
        (0, 0),
        "owned by root, not the checkout"
    );
    assert_eq!(
        read(&root, "/etc/site-keys/munge.key"),
        "munge key stand-in\n"
    );
    assert_eq!(read(&root, "/etc/site-keys/sub/nested.txt"), "nested\n");
    assert_eq!(
        std::fs::read_link(root.join("etc/site-keys/current")).expect("a link"),
        Path::new("munge.key")
    );
    assert_eq!(read(&root, "/etc/site-keys.changed"), "True\n");
    // The folder itself below /srv; links: false leaves the link out, as rsync does.
    assert_eq!(read(&root, "/srv/keys/sub/nested.txt"), "nested\n");
    assert!(!root.join("srv/keys/current").exists());
    assert!(!root.join("etc/site-keys/keys").exists());

    let second = imgbuild_env(&project, &args, &[("IMGBUILD_CACHE", &cache)]);
    assert!(second.status.success(), "{}", stderr(&second));
    let again = statuses(&stdout(&second));
    for task in ["a folder's contents", "the folder itself"] {
        assert_eq!(again[task].0, "ok", "{task} changed on a second run");
    }
    assert_eq!(read(&root, "/etc/site-keys.changed"), "False\n");
}
