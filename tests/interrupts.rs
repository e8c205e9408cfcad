//! Interrupted builds: SIGINT during a role, SIGKILL while a layer is written, SIGKILL during a
//! download. After each: no mount left, no process of the build left, the previous outputs
//! intact, every cached blob and download whole (named by its content), and a rerun succeeds.
//! Needs root and debootstrap.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use sha2::{Digest, Sha256};

struct Setup {
    _work: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    out: PathBuf,
    cache: PathBuf,
}

fn setup() -> Setup {
    setup_with(shared_base_cache)
}

fn setup_with(bases: fn(&Path)) -> Setup {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-interrupt-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let root = work.path().to_owned();
    let project = root.join("project");
    copy_fixture("interrupts", &project);
    let cache = root.join("cache");
    bases(&cache);
    Setup {
        out: root.join("out"),
        project,
        cache,
        root,
        _work: work,
    }
}

fn command(s: &Setup, vars: &[&str], mirror: Option<&str>) -> Command {
    command_for(s, "slow", vars, mirror)
}

/// A build of `image` on the setup's cache, its JSON events on stdout.
fn command_for(s: &Setup, image: &str, vars: &[&str], mirror: Option<&str>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_imgbuild"));
    cmd.arg("-C")
        .arg(&s.project)
        .args([
            "--json",
            "build",
            image,
            "--no-verify",
            "--format",
            "docker-archive",
            "--out",
        ])
        .arg(&s.out)
        .env("IMGBUILD_CACHE", &s.cache)
        .env("SOURCE_DATE_EPOCH", "1700000000");
    if let Some(url) = mirror {
        cmd.args(["--mirror", url]);
    }
    for v in vars {
        cmd.args(["-e", v]);
    }
    cmd
}

/// Builds and returns what the build printed (its events, then its stderr).
fn build_ok(s: &Setup, vars: &[&str], mirror: Option<&str>) -> String {
    let out = command(s, vars, mirror).output().expect("imgbuild");
    assert!(
        out.status.success(),
        "build {vars:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Starts a build and returns it once `ready` says so about a line of its JSON events.
fn start_until(
    s: &Setup,
    vars: &[&str],
    mirror: Option<&str>,
    ready: impl Fn(&str) -> bool,
) -> Child {
    let mut child = command(s, vars, mirror)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("imgbuild");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        assert!(Instant::now() < deadline, "the build never got there");
        match lines.next() {
            Some(Ok(line)) if ready(&line) => break,
            Some(Ok(_)) => {}
            _ => panic!(
                "the build ended before it got there: {}",
                stderr_of(&mut child)
            ),
        }
    }
    // Keep draining stdout so the build never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    child
}

fn stderr_of(child: &mut Child) -> String {
    let mut text = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut text);
    }
    text
}

fn kill(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

fn sha256_file(path: &Path) -> String {
    let mut file = std::fs::File::open(path).expect("open");
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).expect("read");
    format!("{:x}", hasher.finalize())
}

/// Every finished file of a content-addressed folder is named by its sha256.
fn assert_whole(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue; // a temporary file, never read as an entry
        }
        assert_eq!(
            sha256_file(&entry.path()),
            name,
            "{} is not whole",
            entry.path().display()
        );
    }
}

fn processes_with(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle))
        .collect()
}

/// The partial files of docker-archives left in the image's output folder.
fn partial_archives(s: &Setup) -> Vec<String> {
    std::fs::read_dir(s.out.join("slow"))
        .expect("output folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".partial-"))
        .collect()
}

fn after_the_kill(s: &Setup, previous: &[u8]) {
    assert!(
        mounted_below(&s.root).is_empty(),
        "mounts left: {:?}",
        mounted_below(&s.root)
    );
    let archive = s.out.join("slow/slow.tar");
    assert_eq!(
        std::fs::read(&archive).expect("previous output"),
        previous,
        "the previous output changed"
    );
    assert_whole(&s.cache.join("blobs/sha256"));
    assert_whole(&s.cache.join("downloads/sha256"));
}

#[test]
fn sigint_during_a_role_exits_130_and_says_what_it_interrupted() {
    let s = setup();
    build_ok(&s, &["marker=one"], None);
    let previous = std::fs::read(s.out.join("slow/slow.tar")).expect("output");

    let mut child = start_until(&s, &["marker=two", "pause=121.5"], None, |l| {
        l.contains("\"event\":\"task_start\"") && l.contains("\"task\":\"wait\"")
    });
    std::thread::sleep(Duration::from_millis(300));
    kill(&child, "-INT");
    let status = child.wait().expect("wait");
    let err = stderr_of(&mut child);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted: slow during role slow, task 'wait'"),
        "{err}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        processes_with("sleep 121.5").is_empty(),
        "the task outlived the build"
    );
    after_the_kill(&s, &previous);
    // The docker-archive, written while the roles run, left nothing behind.
    assert_eq!(partial_archives(&s), Vec::<String>::new());
    build_ok(&s, &["marker=two"], None);
}

#[test]
fn sigkill_while_a_layer_is_written_leaves_the_cache_whole() {
    let s = setup();
    build_ok(&s, &["marker=one"], None);
    let previous = std::fs::read(s.out.join("slow/slow.tar")).expect("output");

    // 300 MB of random bytes take seconds to compress: stop the build in the middle of it.
    let child = start_until(&s, &["marker=three", "big_mb=300"], None, |l| {
        l.contains("\"event\":\"role_end\"")
    });
    let blobs = s.cache.join("blobs/sha256");
    let deadline = Instant::now() + Duration::from_secs(60);
    // Both in flight: the layer's blob and the docker-archive it streams into (on a loaded
    // machine one may start a moment after the other).
    let writing = || {
        let blob = std::fs::read_dir(&blobs)
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with(".tmp"))
            })
            .unwrap_or(false);
        blob && !partial_archives(&s).is_empty()
    };
    while !writing() {
        assert!(
            Instant::now() < deadline,
            "no layer and archive were being written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(&child, "-KILL");
    let mut child = child;
    let _ = child.wait();
    std::thread::sleep(Duration::from_millis(300));
    after_the_kill(&s, &previous);
    // The layer's folder was placed in the cache before its blob was written: the rerun takes
    // it for unfinished, not damaged, and runs the role again.
    let killed = partial_archives(&s);
    assert_eq!(killed.len(), 1, "the archive was being written: {killed:?}");
    let rerun = build_ok(&s, &["marker=three", "big_mb=300"], None);
    assert!(!rerun.contains("damaged"), "{rerun}");
    // The rerun's archive removed the one the killed build left.
    assert_eq!(partial_archives(&s), Vec::<String>::new());
}

/// Serves `slow.bin` (8 MB): slowly until `fast` is set.
fn throttled_mirror(fast: Arc<AtomicBool>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let fast = fast.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut from = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
                        from = v.trim().trim_end_matches('-').parse().unwrap_or(0);
                    }
                }
                let body: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8).collect();
                let mut out = stream;
                let head = if from > 0 {
                    format!(
                        "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {from}-{}/{}\r\n\r\n",
                        body.len() - from,
                        body.len() - 1,
                        body.len()
                    )
                } else {
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len())
                };
                let _ = out.write_all(head.as_bytes());
                for chunk in body[from..].chunks(64 << 10) {
                    if out.write_all(chunk).is_err() {
                        return;
                    }
                    if !fast.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            });
        }
    });
    url
}

#[test]
fn sigkill_during_a_download_resumes_on_the_rerun() {
    let s = setup();
    build_ok(&s, &["marker=one"], None);
    let previous = std::fs::read(s.out.join("slow/slow.tar")).expect("output");
    let fast = Arc::new(AtomicBool::new(false));
    let mirror = throttled_mirror(fast.clone());

    // The build fetches an unpinned artifact before the role runs (its sha256 keys the layer):
    // watch the partial file, not the events.
    let child = command(&s, &["marker=four", "download=true"], Some(&mirror))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("imgbuild");
    let partial = s.cache.join("downloads/partial");
    let deadline = Instant::now() + Duration::from_secs(60);
    let started = || {
        std::fs::read_dir(&partial)
            .map(|d| {
                d.flatten()
                    .any(|e| e.metadata().map(|m| m.len() > 0).unwrap_or(false))
            })
            .unwrap_or(false)
    };
    while !started() {
        assert!(Instant::now() < deadline, "the download never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(&child, "-KILL");
    let mut child = child;
    let _ = child.wait();
    std::thread::sleep(Duration::from_millis(300));
    after_the_kill(&s, &previous);
    assert!(
        std::fs::read_dir(s.cache.join("downloads/sha256"))
            .map(|d| d.count() == 0)
            .unwrap_or(true),
        "nothing unfinished entered the download cache"
    );
    fast.store(true, Ordering::SeqCst);
    build_ok(&s, &["marker=four", "download=true"], Some(&mirror));
    assert_whole(&s.cache.join("downloads/sha256"));
}

/// Processes whose root (`/proc/PID/root`) is below `dir`: a chroot a build left running.
fn rooted_below(dir: &Path) -> Vec<String> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path().join("root")).ok())
        .filter(|root| root.starts_with(dir))
        .map(|root| root.display().to_string())
        .collect()
}

/// A build of `image` on the setup's cache, as a child with its JSON events on stdout.
fn spawn_build(s: &Setup, image: &str, vars: &[&str]) -> Child {
    command_for(s, image, vars, None)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("imgbuild")
}

/// Waits for a build and returns its manifest digest.
fn manifest_of(child: Child) -> String {
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "built")
        .and_then(|e| e["manifest"].as_str().map(str::to_owned))
        .expect("a built event")
}

fn cache_verify_is_clean(s: &Setup) {
    let out = imgbuild_env(
        &s.project,
        &["cache", "verify"],
        &[("IMGBUILD_CACHE", &s.cache)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn two_builds_on_one_cache_and_one_killed_leave_the_other_and_the_cache_whole() {
    // The cache is verified whole at the end: it owns its bases.
    let s = setup_with(copied_base_cache);
    let steady = std::fs::read_to_string(s.project.join("images/slow.yml"))
        .expect("recipe")
        .replace("slow.yml", "steady.yml")
        .replace("image_name: slow", "image_name: steady");
    std::fs::write(s.project.join("images/steady.yml"), steady).expect("steady recipe");

    // Two images at once; the slow one is killed in its long task while the other builds.
    let slow = start_until(&s, &["pause=4711"], None, |l| {
        l.contains("\"event\":\"task_start\"") && l.contains("\"task\":\"wait\"")
    });
    let other = spawn_build(&s, "steady", &["marker=steady"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while processes_with("sleep 4711").is_empty() {
        assert!(Instant::now() < deadline, "the slow build never slept");
        std::thread::sleep(Duration::from_millis(50));
    }
    kill(&slow, "-KILL");
    let mut slow = slow;
    let _ = slow.wait();
    let first = manifest_of(other);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with("sleep 4711").is_empty() || !rooted_below(&s.root).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the killed build left {:?} running in {:?}",
            processes_with("sleep 4711"),
            rooted_below(&s.root)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        mounted_below(&s.root).is_empty(),
        "{:?}",
        mounted_below(&s.root)
    );
    cache_verify_is_clean(&s);

    // The same image twice at once: both finish, with the same image.
    let a = spawn_build(&s, "steady", &["marker=twice"]);
    let b = spawn_build(&s, "steady", &["marker=twice"]);
    let (a, b) = (manifest_of(a), manifest_of(b));
    assert_eq!(a, b);
    assert_ne!(a, first);
    cache_verify_is_clean(&s);
}

/// A stand-in `qemu-system-x86_64` (first in `PATH`) that answers `--version`, then says it
/// started and waits, as a booting guest does.
fn waiting_qemu(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let qemu = bin.join("qemu-system-x86_64");
    let started = dir.join("qemu-started");
    std::fs::write(
        &qemu,
        format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo 'QEMU emulator version 7.2.0'; exit 0; }}\n\
             echo $$ >{}\nexec sleep 600\n",
            started.display()
        ),
    )
    .expect("stand-in qemu");
    std::fs::set_permissions(&qemu, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    bin
}

#[test]
fn sigkill_during_a_boot_leaves_no_qemu_running() {
    let dir = tempfile::Builder::new()
        .prefix("imgbuild-boot-kill-")
        .tempdir_in("/var/tmp")
        .expect("tempdir");
    let bin = waiting_qemu(dir.path());
    let root = dir.path().join("root");
    for sub in ["usr/bin", "etc", "boot", "lib/modules/6.1.0-50-amd64"] {
        std::fs::create_dir_all(root.join(sub)).expect("rootfs");
    }
    std::fs::write(root.join("boot/vmlinuz-6.1.0-50-amd64"), b"a kernel").expect("kernel");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut boot = Command::new(env!("CARGO_BIN_EXE_imgbuild"))
        .args(["boot", "--accel", "tcg"])
        .arg(&root)
        .env("PATH", path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("imgbuild boot");
    let started = dir.path().join("qemu-started");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !started.exists() {
        assert!(
            Instant::now() < deadline,
            "qemu never started: {}",
            stderr_of(&mut boot)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let qemu = std::fs::read_to_string(&started).expect("qemu's pid");
    let qemu = Path::new("/proc").join(qemu.trim());
    assert!(running(&qemu), "the stand-in runs");
    kill(&boot, "-KILL");
    let _ = boot.wait();
    let deadline = Instant::now() + Duration::from_secs(10);
    while running(&qemu) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!running(&qemu), "QEMU outlived the boot that started it");
}

/// Whether the process of `/proc/<pid>` runs (a zombie waiting to be reaped does not).
fn running(proc_dir: &Path) -> bool {
    std::fs::read_to_string(proc_dir.join("stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            Some(state != 'Z')
        })
        .unwrap_or(false)
}
