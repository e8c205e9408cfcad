//! The fetcher against a fault-injecting mirror on 127.0.0.1: 500s, 404s, a body cut short, a
//! wrong Content-Length, a stalled connection, a wrong sha256, a redirect loop. For each: the
//! retries a user would expect, then an error naming the URL and the cause; nothing bad in the
//! download cache; and the next run against a healthy mirror succeeds.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mirror::{FetchError, FetchOptions, Fetcher, Lock, Pin};
use sha2::{Digest, Sha256};

/// The artifact every path serves when the mirror is healthy.
fn body() -> Vec<u8> {
    (0..200_000u32)
        .flat_map(|i| (i % 253).to_le_bytes())
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

struct FaultyMirror {
    base: String,
    healthy: Arc<AtomicBool>,
    requests: Arc<Mutex<HashMap<String, usize>>>,
}

impl FaultyMirror {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let healthy = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(HashMap::new()));
        let (h, r) = (healthy.clone(), requests.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (h, r) = (h.clone(), r.clone());
                std::thread::spawn(move || serve(stream, &h, &r));
            }
        });
        Self {
            base,
            healthy,
            requests,
        }
    }

    fn url(&self, mode: &str) -> String {
        format!("{}/{mode}/artifact.bin", self.base)
    }

    fn count(&self, mode: &str) -> usize {
        let requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        requests
            .get(&format!("/{mode}/artifact.bin"))
            .copied()
            .unwrap_or(0)
    }

    fn heal(&self) {
        self.healthy.store(true, Ordering::SeqCst);
    }
}

fn serve(stream: TcpStream, healthy: &AtomicBool, requests: &Mutex<HashMap<String, usize>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    let mut range_from = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
            range_from = v.trim().trim_end_matches('-').parse().unwrap_or(0);
        }
    }
    let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let seen = {
        let mut map = requests.lock().unwrap_or_else(|e| e.into_inner());
        let n = map.entry(path.clone()).or_insert(0);
        *n += 1;
        *n
    };
    let mut out = stream;
    let full = body();
    let mode = path.split('/').nth(1).unwrap_or("");
    let healthy = healthy.load(Ordering::SeqCst);
    let _ = match (healthy, mode) {
        (true, _) | (false, "ok") => send_body(&mut out, &full, range_from),
        (false, "500") => status(&mut out, "500 Internal Server Error"),
        (false, "flaky") if seen <= 2 => status(&mut out, "503 Service Unavailable"),
        (false, "flaky") => send_body(&mut out, &full, range_from),
        (false, "404") => status(&mut out, "404 Not Found"),
        (false, "short") => {
            // Declares the whole file, sends a third, hangs up.
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                full.len()
            );
            out.write_all(&full[..full.len() / 3])
        }
        (false, "longer") => {
            // Declares fewer bytes than the file has: the client stops early.
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                full.len() - 1000
            );
            out.write_all(&full)
        }
        (false, "stall") => {
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                full.len()
            );
            let _ = out.write_all(&full[..1000]);
            let _ = out.flush();
            std::thread::sleep(Duration::from_secs(5));
            Ok(())
        }
        (false, "wrongsha") => {
            let mut other = full.clone();
            other[100] ^= 0xff;
            send_body(&mut out, &other, range_from)
        }
        (false, "loop") => write!(
            out,
            "HTTP/1.1 302 Found\r\nLocation: {path}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        _ => status(&mut out, "400 Bad Request"),
    };
}

fn status(out: &mut TcpStream, status: &str) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
}

fn send_body(out: &mut TcpStream, full: &[u8], from: usize) -> std::io::Result<()> {
    if from > 0 && from < full.len() {
        write!(
            out,
            "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {from}-{}/{}\r\nConnection: close\r\n\r\n",
            full.len() - from,
            full.len() - 1,
            full.len()
        )?;
        out.write_all(&full[from..])
    } else {
        write!(
            out,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            full.len()
        )?;
        out.write_all(full)
    }
}

fn fetcher(cache: &Path, lock: Lock) -> Fetcher {
    let options = FetchOptions {
        attempts: 3,
        backoff: Duration::from_millis(10),
        timeout: Duration::from_millis(400),
        ..FetchOptions::default()
    };
    Fetcher::new(cache, lock, options).expect("fetcher")
}

/// Every file in the cache is named by its own sha256, and only the good artifact is there.
fn assert_cache_clean(cache: &Path) {
    let good = sha256_hex(&body());
    for entry in std::fs::read_dir(cache.join("sha256")).expect("cache") {
        let entry = entry.expect("entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        let bytes = std::fs::read(entry.path()).expect("read");
        assert_eq!(
            sha256_hex(&bytes),
            name,
            "a cache file not named by its content"
        );
        assert_eq!(
            name, good,
            "something other than the artifact entered the cache"
        );
    }
}

fn pinned_lock(url: &str) -> Lock {
    let mut lock = Lock::default();
    let full = body();
    lock.insert(
        url,
        Pin {
            size: full.len() as u64,
            sha256: sha256_hex(&full),
        },
    );
    lock
}

/// Runs one fault: the fetch fails with a message holding `expect`, the cache stays clean, the
/// mirror saw `requests` requests; then, healed, a new fetcher on the same cache succeeds.
fn fault(mode: &str, pinned: bool, expect: &[&str], requests: usize) {
    let mirror = FaultyMirror::start();
    let cache = tempfile::tempdir().expect("cache");
    let url = mirror.url(mode);
    let lock = if pinned {
        pinned_lock(&url)
    } else {
        Lock::default()
    };
    let err = fetcher(cache.path(), lock.clone())
        .fetch(&url, None)
        .expect_err(mode);
    let text = err.to_string();
    assert!(
        text.contains(&url),
        "{mode}: the error names the URL: {text}"
    );
    for e in expect {
        assert!(text.contains(e), "{mode}: '{e}' not in: {text}");
    }
    assert_eq!(mirror.count(mode), requests, "{mode}: requests made");
    assert_cache_clean(cache.path());

    mirror.heal();
    let path = fetcher(cache.path(), lock)
        .fetch(&url, None)
        .unwrap_or_else(|e| panic!("{mode}: healthy mirror: {e}"));
    assert_eq!(std::fs::read(path).expect("read"), body(), "{mode}");
    assert_cache_clean(cache.path());
}

#[test]
fn server_errors_are_retried_then_reported() {
    fault("500", false, &["HTTP 500", "after 3 attempts"], 3);
}

#[test]
fn a_flaky_mirror_succeeds_within_the_retries() {
    let mirror = FaultyMirror::start();
    let cache = tempfile::tempdir().expect("cache");
    let path = fetcher(cache.path(), Lock::default())
        .fetch(&mirror.url("flaky"), None)
        .expect("third attempt works");
    assert_eq!(std::fs::read(path).expect("read"), body());
    assert_eq!(mirror.count("flaky"), 3);
}

#[test]
fn not_found_is_not_retried_and_says_what_to_do() {
    fault("404", false, &["HTTP 404", "not on the mirror"], 1);
}

#[test]
fn a_body_cut_short_is_retried_and_resumed() {
    fault("short", false, &["after 3 attempts"], 3);
}

#[test]
fn a_wrong_content_length_is_caught_by_the_pin() {
    fault("longer", true, &["mirror.lock pins", "sha256 is"], 1);
}

#[test]
fn a_stalled_mirror_is_tried_again_only_while_it_gets_further() {
    // The stalling mirror sends the same first 1000 bytes on every request and then nothing:
    // the second attempt gets no further than the first, so the fetch ends there.
    fault(
        "stall",
        false,
        &["sent nothing for 0.4 s after 1000 bytes"],
        2,
    );
}

#[test]
fn a_wrong_sha256_never_enters_the_cache() {
    fault(
        "wrongsha",
        true,
        &["mirror.lock pins", "the mirror's file changed"],
        1,
    );
}

#[test]
fn a_task_checksum_mismatch_never_enters_the_cache() {
    let mirror = FaultyMirror::start();
    let cache = tempfile::tempdir().expect("cache");
    let url = mirror.url("wrongsha");
    let good = sha256_hex(&body());
    let err = fetcher(cache.path(), Lock::default())
        .fetch(&url, Some(&good))
        .expect_err("checksum");
    assert!(matches!(err, FetchError::Mismatch { .. }), "{err}");
    assert_cache_clean(cache.path());
}

#[test]
fn a_redirect_loop_is_reported_without_retrying_forever() {
    fault("loop", false, &["redirect"], 5);
}

#[test]
fn a_path_s_own_timeout_and_attempts_apply_to_its_urls() {
    // mirror.toml's [paths."/stall/"]: a shorter stall timeout.
    let mirror = FaultyMirror::start();
    let cache = tempfile::tempdir().expect("cache");
    let options = FetchOptions {
        attempts: 3,
        backoff: Duration::from_millis(10),
        timeout: Duration::from_millis(400),
        paths: vec![mirror::PathRule {
            prefix: "/stall/".into(),
            attempts: None,
            timeout: Some(Duration::from_millis(150)),
        }],
        ..FetchOptions::default()
    };
    let fetcher = Fetcher::new(cache.path(), Lock::default(), options).expect("fetcher");
    let err = fetcher
        .fetch(&mirror.url("stall"), None)
        .expect_err("stalls");
    assert!(err.to_string().contains("sent nothing for 0.1 s"), "{err}");
}
