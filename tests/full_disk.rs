//! A full disk (issue 13): the outputs and the cache on small tmpfs mounts. A step that does not
//! fit stops the build with the path and the figures, leaves the previous outputs and the cache
//! whole, and the same build succeeds once there is room.
//! Needs root and debootstrap, as CI has.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// A tmpfs mounted for the test, unmounted however the test ends.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, megabytes: u64) -> Tmpfs {
        Tmpfs::mount_with(dir, &format!("size={megabytes}M"))
    }

    fn mount_with(dir: &Path, options: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).expect("mount point");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir)
            .status()
            .expect("mount");
        assert!(status.success(), "mount tmpfs on {}", dir.display());
        Tmpfs(dir.to_owned())
    }

    /// Resizes to what is used now plus `spare` megabytes.
    fn leave_only(&self, spare: u64) {
        let df = Command::new("df")
            .args(["-m", "--output=used"])
            .arg(&self.0)
            .output()
            .expect("df");
        let used: u64 = String::from_utf8_lossy(&df.stdout)
            .lines()
            .nth(1)
            .and_then(|n| n.trim().parse().ok())
            .expect("df's figure");
        self.resize(used + spare);
    }

    fn resize(&self, megabytes: u64) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={megabytes}M")])
            .arg(&self.0)
            .status()
            .expect("remount");
        assert!(status.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn build(project: &Path, cache: &Path, out: &Path, extra: &[&str]) -> Output {
    let out = out.to_string_lossy().into_owned();
    let mut args = vec!["build", "--no-verify", "--out", &out];
    args.extend_from_slice(extra);
    imgbuild_env(
        project,
        &args,
        &[
            ("IMGBUILD_CACHE", cache),
            ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
        ],
    )
}

/// Names below `dir` that only a half-finished write leaves.
fn leftovers(dir: &Path) -> Vec<String> {
    let found = Command::new("find")
        .arg(dir)
        .args([
            "-name",
            ".tmp*",
            "-o",
            "-name",
            ".oci-*",
            "-o",
            "-name",
            ".rootfs-*",
        ])
        .args(["-o", "-name", "*.tmp", "-o", "-name", "*.tmp-*"])
        .output()
        .expect("find");
    String::from_utf8_lossy(&found.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The project, with a role downloading `big.bin` from the mirror into the image.
fn download_project(work: &Path) -> PathBuf {
    let project = project(work);
    let role = project.join("roles/fetcher/tasks");
    std::fs::create_dir_all(&role).expect("role");
    std::fs::write(
        role.join("main.yml"),
        "- name: a big download\n  get_url: {url: \"{{ mirror_server }}/big.bin\", dest: /srv/big.bin}\n",
    )
    .expect("role");
    std::fs::write(
        project.join("images/download-test.yml"),
        "- name: download-test.yml\n  hosts: localhost\n  vars:\n    bootstrap: debootstrap\n    build_from: bookworm\n    image_name: download-test\n    kernel_version: \"6.1.0-50-amd64\"\n    greeting: hi\n  roles: [plain, fetcher]\n",
    )
    .expect("recipe");
    project
}

fn project(work: &Path) -> PathBuf {
    let project = work.join("project");
    copy_fixture("images", &project);
    // A role that writes more than the cache's disk holds.
    let role = project.join("roles/filler/tasks");
    std::fs::create_dir_all(&role).expect("role");
    std::fs::write(
        role.join("main.yml"),
        "- name: a big file\n  command: dd if=/dev/zero of=/var/filler bs=1M count={{ filler_mb }} status=none\n",
    )
    .expect("role");
    std::fs::write(
        project.join("images/filler-test.yml"),
        "- name: filler-test.yml\n  hosts: localhost\n  vars:\n    bootstrap: debootstrap\n    build_from: bookworm\n    image_name: filler-test\n    kernel_version: \"6.1.0-50-amd64\"\n    greeting: hi\n    filler_mb: 64\n  roles: [plain, filler]\n",
    )
    .expect("recipe");
    project
}

#[test]
fn a_full_disk_stops_the_build_with_the_figures_and_leaves_nothing_half_written() {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-full-disk-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let project = project(work.path());

    // The outputs' disk: a build fits, then the next one does not.
    let cache = work.path().join("cache");
    shared_base_cache(&cache);
    let out = work.path().join("out");
    let out_disk = Tmpfs::mount(&out, 600);
    let first = build(&project, &cache, &out, &["repro-test"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let archive = out.join("repro-test/repro-test.tar");
    let before = std::fs::read(&archive).expect("the first archive");
    out_disk.leave_only(8);
    let changed = build(
        &project,
        &cache,
        &out,
        &["repro-test", "-e", "greeting=changed"],
    );
    assert_eq!(changed.status.code(), Some(1), "{}", stderr(&changed));
    let message = stderr(&changed);
    assert!(
        message.contains(&out.join("repro-test").to_string_lossy().into_owned())
            && message.contains("needs about")
            && message.contains("free"),
        "{message}"
    );
    assert_eq!(
        std::fs::read(&archive).expect("the previous archive"),
        before,
        "the previous outputs stay"
    );
    assert_eq!(leftovers(&out), Vec::<String>::new());
    out_disk.resize(600);
    let again = build(
        &project,
        &cache,
        &out,
        &["repro-test", "-e", "greeting=changed"],
    );
    assert!(again.status.success(), "{}", stderr(&again));
    assert_ne!(std::fs::read(&archive).expect("the new archive"), before);
    drop(out_disk);

    // The cache's disk fills up inside a role: the task's error, where the cache is and what
    // it has free; no layer entry, work folder or temporary blob is left.
    let small_cache = work.path().join("small-cache");
    let cache_disk = Tmpfs::mount(&small_cache, 200);
    shared_base_cache(&small_cache);
    let full = build(
        &project,
        &small_cache,
        &work.path().join("out2"),
        &["filler-test", "-e", "filler_mb=300"],
    );
    assert_eq!(full.status.code(), Some(1), "{}", stderr(&full));
    let message = stderr(&full);
    assert!(
        message.contains("No space left on device")
            && message.contains("The disk filled up")
            && message.contains(&small_cache.to_string_lossy().into_owned()),
        "{message}"
    );
    for layer in std::fs::read_dir(small_cache.join("layers"))
        .expect("layers")
        .flatten()
    {
        assert!(
            layer.path().join("entry.json").is_file(),
            "a half entry: {layer:?}"
        );
    }
    assert_eq!(leftovers(&small_cache), Vec::<String>::new());
    let work_dirs = std::fs::read_dir(small_cache.join("work"))
        .expect("work")
        .count();
    assert_eq!(work_dirs, 0, "the role's work folder is removed");
    cache_disk.resize(1024);
    let fits = build(
        &project,
        &small_cache,
        &work.path().join("out2"),
        &["filler-test", "-e", "filler_mb=300"],
    );
    assert!(fits.status.success(), "{}", stderr(&fits));
    drop(cache_disk);
    assert!(mounted_below(work.path()).is_empty());
}

#[test]
fn a_cache_or_output_on_a_read_only_filesystem_is_one_line_and_exit_2_before_any_work() {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-read-only-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let project = project(work.path());
    let read_only = Tmpfs::mount_with(&work.path().join("ro"), "ro,size=1M");
    let writable = work.path().join("cache");
    for (cache, out, names) in [
        (
            read_only.0.clone(),
            work.path().join("out"),
            "IMGBUILD_CACHE",
        ),
        (writable, read_only.0.join("out"), "--out"),
    ] {
        let refused = build(&project, &cache, &out, &["repro-test"]);
        let message = stderr(&refused);
        assert_eq!(refused.status.code(), Some(2), "{message}");
        assert_eq!(message.trim().lines().count(), 1, "{message}");
        assert!(
            message.contains("cannot be written") && message.contains(names),
            "{message}"
        );
    }
    drop(read_only);
}

#[test]
fn a_download_that_fills_the_cache_s_disk_leaves_no_partial_file_and_resumes_when_there_is_room() {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-full-download-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let project = download_project(work.path());
    // 250 MB of zeros, sparse on the mirror's side.
    let mirror_dir = work.path().join("mirror");
    std::fs::create_dir_all(&mirror_dir).expect("mirror");
    std::fs::File::create(mirror_dir.join("big.bin"))
        .and_then(|f| f.set_len(250 << 20))
        .expect("big.bin");
    let mirror = serve_dir(&mirror_dir);
    let cache = work.path().join("cache");
    let cache_disk = Tmpfs::mount(&cache, 200);
    shared_base_cache(&cache);
    let out = work.path().join("out");
    let args = ["download-test", "--mirror", mirror.as_str()];
    let full = build(&project, &cache, &out, &args);
    assert_eq!(full.status.code(), Some(1), "{}", stderr(&full));
    let message = stderr(&full);
    assert!(
        message.contains("No space left on device") && message.contains("The disk filled up"),
        "{message}"
    );
    let partial = std::fs::read_dir(cache.join("downloads/partial"))
        .expect("partial downloads")
        .count();
    assert_eq!(
        partial, 0,
        "a partial download holding the space the user must free"
    );
    assert_eq!(leftovers(&cache), Vec::<String>::new());
    cache_disk.resize(1024);
    let fits = build(&project, &cache, &out, &args);
    assert!(fits.status.success(), "{}", stderr(&fits));
    drop(cache_disk);
}
