//! Helpers shared by the end-to-end tests: the repository root and running the binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root (where `images/` and `roles/` are).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// Runs `imgbuild -C <dir> <args...>`.
pub fn imgbuild(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_imgbuild"))
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("run imgbuild")
}

/// `dist/`, where `scripts/static-binary` and `scripts/package` write: in the target folder,
/// above the profile's folder of this build's imgbuild and above its target triple's folder
/// when the build names one (`target/x86_64-unknown-linux-musl/release/imgbuild`).
pub fn dist_folder() -> PathBuf {
    let binary = Path::new(env!("CARGO_BIN_EXE_imgbuild"));
    let mut target = binary
        .parent()
        .and_then(Path::parent)
        .expect("the target folder");
    if target
        .file_name()
        .is_some_and(|name| name.to_string_lossy().contains("-linux-"))
    {
        target = target.parent().expect("the target folder");
    }
    target.join("dist")
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Where tests cache what is slow to make (the debootstrapped rootfs), outside the repository:
/// `$IMGBUILD_TEST_CACHE`, else `/var/tmp/imgbuild-test-cache`.
pub fn test_cache() -> PathBuf {
    std::env::var_os("IMGBUILD_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/imgbuild-test-cache"))
}

/// Holds `test_cache()/<name>.lock` until dropped: the tests that `scripts/test` runs side by
/// side, in other processes, make a cached fixture once (one makes it, the others wait).
pub fn cache_lock(name: &str) -> std::fs::File {
    std::fs::create_dir_all(test_cache()).expect("test cache");
    image::base::lock(&test_cache().join(format!("{name}.lock"))).expect("lock the test cache")
}

/// Fails the test unless it runs as root (chroot, namespaces and debootstrap need it).
pub fn require_root() {
    assert!(
        rustix_is_root(),
        "this end-to-end test needs root (as CI runs it): chroot, mount namespaces and debootstrap"
    );
}

/// Whether the test runs as root (for a test that skips, with a message, when not).
pub fn running_as_root() -> bool {
    rustix_is_root()
}

fn rustix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

static DEBOOTSTRAP: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The rootfs the differential harness and the conformance suite run roles on, as the cache
/// name and debootstrap's `--include` list: what ansible-test's target containers have that
/// roles and Ansible's own tests use (Python with apt's bindings and Jinja2, systemd, `file`,
/// `ssh-keygen`).
/// A new list needs a new name: a cached rootfs is kept whatever the list says.
pub const ANSIBLE_ROOTFS: (&str, &str) = (
    "bookworm-ansible-3",
    "python3,python3-apt,python3-jinja2,systemd,file,openssh-client",
);

/// A Debian bookworm minbase rootfs (with `include`, debootstrap's `--include` list, if any),
/// debootstrapped once from the archive this machine's apt sources name and cached as `name`
/// in [`test_cache`]; its path.
pub fn debootstrapped(name: &str, include: Option<&str>) -> PathBuf {
    require_root();
    let cached = test_cache().join(name);
    let _guard = DEBOOTSTRAP.lock().unwrap_or_else(|e| e.into_inner());
    let _lock = cache_lock(name);
    if cached.join("etc/os-release").is_file() {
        return cached;
    }
    let archive = mirror::debian_archive::host_archive("bookworm")
        .expect("this machine's apt sources name no bookworm archive");
    std::fs::create_dir_all(test_cache()).expect("cache dir");
    let work = test_cache().join(format!("{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let mut command = Command::new("debootstrap");
    command.arg("--variant=minbase");
    if let Some(include) = include {
        command.arg(format!("--include={include}"));
    }
    let status = command
        .arg("bookworm")
        .arg(&work)
        .arg(&archive)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("debootstrap (apt-get install debootstrap)");
    assert!(status.success(), "debootstrap failed");
    let _ = std::fs::remove_dir_all(&cached);
    std::fs::rename(&work, &cached).expect("cache the rootfs");
    cached
}

/// A fresh copy of a Debian bookworm minbase rootfs at `dest` (debootstrapped once, from the
/// archive this machine's apt sources name, then cached in [`test_cache`]).
pub fn bookworm_rootfs(dest: &Path) {
    let cached = debootstrapped("bookworm-minbase", None);
    let status = Command::new("cp")
        .arg("-a")
        .arg(&cached)
        .arg(dest)
        .status()
        .expect("cp");
    assert!(status.success(), "copying the cached rootfs failed");
}

/// Serves the files below `dir` over HTTP on 127.0.0.1 (GET and HEAD) until the test ends: a
/// `.json` file as `application/json`, a path beside a `<path>.location` file as a redirect to
/// the URL it holds, If-Modified-Since answered.
pub fn serve_dir(dir: &Path) -> String {
    serve_dir_on(dir, 0)
}

/// `serve_dir` on `port` when it is free (any free port otherwise). A mirror URL that stays
/// the same from run to run keeps the layers that download from it cached between runs.
pub fn serve_dir_on(dir: &Path, port: u16) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind(("127.0.0.1", port))
        .or_else(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let root = dir.to_owned();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let root = root.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut request = String::new();
                let _ = reader.read_line(&mut request);
                let mut since = None;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':') {
                        if name.eq_ignore_ascii_case("if-modified-since") {
                            since = http_date(value.trim());
                        }
                    }
                }
                let mut words = request.split_whitespace();
                let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or("/"));
                let file = root.join(path.trim_start_matches('/'));
                let safe = !path.contains("..");
                let modified = std::fs::metadata(&file)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map(|d| d.as_secs());
                if let (Some(since), Some(modified), true) = (since, modified, safe) {
                    if modified <= since {
                        let _ = write!(
                            stream,
                            "HTTP/1.1 304 Not Modified\r\nConnection: close\r\n\r\n"
                        );
                        return;
                    }
                }
                // `<path>.location` holding a URL: a redirect there.
                let redirect = std::fs::read_to_string(format!("{}.location", file.display()));
                if let (Ok(location), true) = (redirect, safe) {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 302 Found\r\nLocation: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        location.trim()
                    );
                    return;
                }
                let kind = match file.extension().and_then(|e| e.to_str()) {
                    Some("json") => "Content-Type: application/json\r\n",
                    _ => "",
                };
                match std::fs::read(&file).ok().filter(|_| safe && file.is_file()) {
                    Some(body) => {
                        let _ = write!(
                            stream,
                            "HTTP/1.1 200 OK\r\n{kind}Content-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        );
                        if method != "HEAD" {
                            let _ = stream.write_all(&body);
                        }
                    }
                    None => {
                        let _ = write!(stream, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    }
                }
            });
        }
    });
    format!("http://{addr}/")
}

/// Seconds since the epoch of an HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn http_date(text: &str) -> Option<u64> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let [_, day, month, year, time, ..] = words.as_slice() else {
        return None;
    };
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = months.iter().position(|m| m == month)? as i64 + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = time.split(':').filter_map(|p| p.parse().ok()).collect();
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + h * 3600 + m * 60 + s).ok()
}

/// Runs `imgbuild -C <dir> <args...>` with extra environment variables.
pub fn imgbuild_env(dir: &Path, args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_imgbuild"));
    command.arg("-C").arg(dir).args(args);
    for (k, v) in envs {
        command.env(k, v);
    }
    command.output().expect("run imgbuild")
}

/// Copies a fixture project (a folder below tests/fixtures) to `dest`, so that a test may
/// write into it (mirror.lock).
pub fn copy_fixture(name: &str, dest: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(repo_root().join("tests/fixtures").join(name))
        .arg(dest)
        .status()
        .expect("cp");
    assert!(status.success());
}

/// Whether any mount of this machine is below `path`.
pub fn mounted_below(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let needle = path.to_string_lossy().into_owned();
    text.lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(4)
                .is_some_and(|m| m.starts_with(&needle))
        })
        .map(str::to_owned)
        .collect()
}

/// Links the shared debootstrap bases of the image tests into the cache folder `cache`:
/// blobs, layers, the record of last builds and work folders stay each test's own (a build
/// writes the base's layer from the shared tree into its own blobs), so that collecting one
/// test's cache never touches another's.
pub fn shared_base_cache(cache: &Path) {
    let shared = test_cache().join("image-tests-cache");
    std::fs::create_dir_all(cache).expect("cache");
    std::fs::create_dir_all(shared.join("bases")).expect("shared cache");
    std::os::unix::fs::symlink(shared.join("bases"), cache.join("bases")).expect("link cache");
}

/// Gives the cache folder `cache` its own copy of the image tests' debootstrapped bases (hard
/// links: no bytes copied), for a test that checks or collects the whole cache. The layer of
/// each base is written again from the tree into the cache's own blobs, with its own record.
pub fn copied_base_cache(cache: &Path) {
    let shared = test_cache().join("image-tests-cache/bases");
    std::fs::create_dir_all(cache.join("bases")).expect("cache");
    for base in std::fs::read_dir(&shared).into_iter().flatten().flatten() {
        if !base.path().join("tree").is_dir() {
            continue;
        }
        let status = Command::new("cp")
            .arg("-al")
            .arg(base.path())
            .arg(cache.join("bases"))
            .status()
            .expect("cp");
        assert!(status.success(), "copying {}", base.path().display());
        // A base's layer records name blobs in the cache that wrote them: not this one's.
        let copy = cache.join("bases").join(base.file_name());
        for record in std::fs::read_dir(&copy).expect("copied base").flatten() {
            if record.file_name().to_string_lossy().starts_with("layer-") {
                std::fs::remove_file(record.path()).expect("remove a record");
            }
        }
    }
}

/// Where each layer of a build's `built` event came from, by role: `registry` (taken from
/// the registry cache), `cache` (the local layer cache) or `built`.
pub fn layer_sources(built: &serde_json::Value) -> Vec<(String, &'static str)> {
    let layers = built["layers"].as_array().cloned().unwrap_or_default();
    layers
        .iter()
        .map(|l| {
            let source = match (l["from_registry"] == true, l["cached"] == true) {
                (true, _) => "registry",
                (false, true) => "cache",
                (false, false) => "built",
            };
            (l["role"].as_str().unwrap_or_default().to_owned(), source)
        })
        .collect()
}

/// The `built` event of a `--json` build that succeeded (the test fails with its output
/// otherwise).
pub fn built_event(output: &Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "build failed: {}{}",
        stdout(output),
        stderr(output)
    );
    stdout(output)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "built")
        .expect("a built event")
}

/// What `dpkg-query -W` and `modinfo` find in the rootfs `root` that the SBOM file `sbom`
/// does not list: each installed package (name, version, architecture) and each module under
/// `/lib/modules/*/updates` (its `.modinfo` name, at its path), as lines naming it.
pub fn sbom_misses(root: &Path, sbom: &Path) -> Vec<String> {
    let bom: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sbom).expect("the SBOM")).expect("SBOM JSON");
    let components = bom["components"].as_array().cloned().unwrap_or_default();
    let prop = |c: &serde_json::Value, name: &str| {
        c["properties"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == name))
            .and_then(|p| p["value"].as_str().map(str::to_owned))
    };
    let listed = |kind: &str, name: &str, check: &dyn Fn(&serde_json::Value) -> bool| {
        components
            .iter()
            .any(|c| c["type"] == kind && c["name"] == name && check(c))
    };
    let mut misses = Vec::new();
    let admindir = root.join("var/lib/dpkg");
    let query = Command::new("dpkg-query")
        .arg(format!("--admindir={}", admindir.display()))
        .args([
            "-W",
            "-f",
            "${db:Status-Status}\\t${Package}\\t${Version}\\t${Architecture}\\n",
        ])
        .output()
        .expect("dpkg-query");
    assert!(query.status.success(), "dpkg-query: {}", stderr(&query));
    let text = String::from_utf8_lossy(&query.stdout).into_owned();
    let mut packages = 0;
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let [state, name, version, arch] = fields[..] else {
            continue;
        };
        if state == "not-installed" || state == "config-files" {
            continue;
        }
        packages += 1;
        if !listed("library", name, &|c| {
            c["version"] == version && prop(c, "imgbuild:arch").as_deref() == Some(arch)
        }) {
            misses.push(format!("package {name} {version} {arch}"));
        }
    }
    assert!(
        packages > 0,
        "dpkg-query listed no package in {}",
        root.display()
    );
    let modules = root.join("lib/modules");
    for kernel in std::fs::read_dir(&modules).into_iter().flatten().flatten() {
        let updates = kernel.path().join("updates");
        let mut stack = vec![updates];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let named = Command::new("modinfo")
                    .args(["-F", "name"])
                    .arg(&path)
                    .output()
                    .expect("modinfo (kmod; .ci/run installs it)");
                if !named.status.success() {
                    continue;
                }
                let name = String::from_utf8_lossy(&named.stdout).trim().to_owned();
                let rel = path.strip_prefix(root).expect("under the root");
                let file = format!("/{}", rel.display());
                if !listed("device-driver", &name, &|c| {
                    prop(c, "imgbuild:file").as_deref() == Some(file.as_str())
                }) {
                    misses.push(format!("module {name} at {file}"));
                }
            }
        }
    }
    misses
}

/// The check `id` of a verify or boot report (the test fails, showing the report, without it).
pub fn check<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == id))
        .unwrap_or_else(|| panic!("no check {id}: {report:#}"))
}
