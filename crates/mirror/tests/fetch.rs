//! Downloads against a real HTTP server on 127.0.0.1 that misbehaves on request.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mirror::{FetchError, FetchOptions, Fetcher, Lock, Pin};
use sha2::Digest;

const BODY: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// Serves BODY at any path; `plan` decides per request: "ok", "500", "404", "cut" (half the
/// body with the full Content-Length).
fn serve(plan: Vec<&'static str>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(plan.len().max(1) * 2) {
            let Ok(mut stream) = stream else { continue };
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut range_start = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
                    range_start = v.trim().trim_end_matches('-').parse().unwrap_or(0);
                }
            }
            let mode = plan.get(n).copied().unwrap_or("ok");
            let response: Vec<u8> = match mode {
                "500" => {
                    b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
                }
                "404" => {
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        .to_vec()
                }
                "cut" => {
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        BODY.len()
                    )
                    .into_bytes();
                    r.extend_from_slice(&BODY[..BODY.len() / 2]);
                    r
                }
                _ if range_start > 0 => {
                    let rest = &BODY[range_start..];
                    let mut r = format!(
                        "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {}-{}/{}\r\nConnection: close\r\n\r\n",
                        rest.len(), range_start, BODY.len() - 1, BODY.len()
                    )
                    .into_bytes();
                    r.extend_from_slice(rest);
                    r
                }
                _ => {
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        BODY.len()
                    )
                    .into_bytes();
                    r.extend_from_slice(BODY);
                    r
                }
            };
            let _ = stream.write_all(&response);
        }
    });
    (format!("http://{addr}"), count)
}

fn options() -> FetchOptions {
    FetchOptions {
        attempts: 3,
        backoff: Duration::from_millis(10),
        timeout: Duration::from_secs(5),
        ..FetchOptions::default()
    }
}

fn sha(bytes: &[u8]) -> String {
    format!("{:x}", sha2::Sha256::digest(bytes))
}

#[test]
fn downloads_pins_and_serves_from_cache() {
    let (base, count) = serve(vec!["ok"]);
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path(), Lock::default(), options()).expect("fetcher");
    let path = fetcher
        .fetch(&format!("{base}/nvidia/x.run"), None)
        .expect("fetch");
    assert_eq!(std::fs::read(&path).expect("read"), BODY);
    let lock = fetcher.lock();
    assert_eq!(
        lock.get("http://elsewhere/nvidia/x.run"),
        Some(&Pin {
            size: BODY.len() as u64,
            sha256: sha(BODY)
        })
    );
    // A second fetcher with the lock finds the pinned file in the cache without asking the mirror.
    let again = Fetcher::new(
        cache.path(),
        lock,
        FetchOptions {
            locked: true,
            ..options()
        },
    )
    .expect("fetcher");
    again
        .fetch(&format!("{base}/nvidia/x.run"), None)
        .expect("cached");
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[test]
fn a_damaged_cached_copy_is_dropped_and_fetched_again() {
    let (base, count) = serve(vec!["ok", "ok"]);
    let cache = tempfile::tempdir().expect("cache");
    let warnings = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = warnings.clone();
    let fetcher = Fetcher::new(cache.path(), Lock::default(), options())
        .expect("fetcher")
        .with_warnings(Box::new(move |m| {
            seen.lock().expect("warnings").push(m.to_owned())
        }));
    let url = format!("{base}/nvidia/x.run");
    let path = fetcher.fetch(&url, None).expect("fetch");
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[0] ^= 0xff;
    std::fs::write(&path, bytes).expect("flip a byte");
    let again = fetcher.fetch(&url, None).expect("fetched again");
    assert_eq!(std::fs::read(&again).expect("read"), BODY);
    assert_eq!(
        count.load(Ordering::SeqCst),
        2,
        "the damaged copy was not used"
    );
    let warnings = warnings.lock().expect("warnings");
    assert!(
        warnings.len() == 1 && warnings[0].contains("no longer has its sha256"),
        "{warnings:?}"
    );
}

#[test]
fn retries_server_errors_and_resumes_cut_bodies() {
    let (base, count) = serve(vec!["500", "cut", "ok"]);
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path(), Lock::default(), options()).expect("fetcher");
    let path = fetcher
        .fetch(&format!("{base}/a.tgz"), None)
        .expect("fetch after faults");
    assert_eq!(std::fs::read(&path).expect("read"), BODY);
    assert_eq!(count.load(Ordering::SeqCst), 3);
}

#[test]
fn not_found_fails_at_once_and_leaves_no_partial() {
    let (base, count) = serve(vec!["404"]);
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path(), Lock::default(), options()).expect("fetcher");
    let err = fetcher
        .fetch(&format!("{base}/missing.tgz"), None)
        .expect_err("404");
    assert!(
        matches!(err, FetchError::Status { status: 404, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("/missing.tgz"), "{err}");
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert_eq!(
        std::fs::read_dir(cache.path().join("partial"))
            .expect("dir")
            .count(),
        0
    );
    assert_eq!(
        std::fs::read_dir(cache.path().join("sha256"))
            .expect("dir")
            .count(),
        0
    );
}

#[test]
fn a_wrong_sha_is_refused_and_not_cached_under_the_pin() {
    let (base, _) = serve(vec!["ok", "ok"]);
    let cache = tempfile::tempdir().expect("cache");
    let mut lock = Lock::default();
    lock.insert(
        "http://x/a.tgz",
        Pin {
            size: 3,
            sha256: "0".repeat(64),
        },
    );
    let fetcher = Fetcher::new(cache.path(), lock, options()).expect("fetcher");
    let err = fetcher
        .fetch(&format!("{base}/a.tgz"), None)
        .expect_err("mismatch");
    assert!(matches!(err, FetchError::Mismatch { .. }), "{err}");
    assert!(!cache.path().join("sha256").join("0".repeat(64)).exists());
    let fetcher = Fetcher::new(cache.path(), Lock::default(), options()).expect("fetcher");
    let err = fetcher
        .fetch(&format!("{base}/a.tgz"), Some(&"1".repeat(64)))
        .expect_err("checksum");
    assert!(err.to_string().contains("the task's checksum"), "{err}");
}

#[test]
fn locked_refuses_unpinned() {
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(
        cache.path(),
        Lock::default(),
        FetchOptions {
            locked: true,
            ..options()
        },
    )
    .expect("fetcher");
    let err = fetcher
        .fetch("http://127.0.0.1:9/x.tgz", None)
        .expect_err("locked");
    assert!(matches!(err, FetchError::NotPinned { .. }), "{err}");
}

#[test]
fn unreachable_mirror_names_the_url_after_retries() {
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path(), Lock::default(), options()).expect("fetcher");
    let err = fetcher
        .fetch("http://127.0.0.1:9/x.tgz", None)
        .expect_err("refused");
    assert!(
        matches!(err, FetchError::Transport { attempts: 3, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("127.0.0.1:9/x.tgz"));
}

#[test]
fn progress_reports_the_finished_size() {
    let (base, _) = serve(vec!["ok"]);
    let cache = tempfile::tempdir().expect("cache");
    type Seen = std::sync::Mutex<Vec<(u64, Option<u64>)>>;
    let seen: Arc<Seen> = Arc::default();
    let sink = seen.clone();
    let fetcher = Fetcher::new(cache.path(), Lock::default(), options())
        .expect("fetcher")
        .with_progress(Box::new(move |_, bytes, total| {
            sink.lock().expect("lock").push((bytes, total))
        }));
    fetcher
        .fetch(&format!("{base}/p.bin"), None)
        .expect("fetch");
    let seen = seen.lock().expect("lock");
    assert_eq!(
        seen.last(),
        Some(&(BODY.len() as u64, Some(BODY.len() as u64)))
    );
}
