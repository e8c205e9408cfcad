//! Downloads through the site mirror: streamed, verified while streaming, stored by sha256 in a
//! cache shared by all builds, pinned in `mirror.lock`, retried with backoff and resumed.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::lock::{Lock, Pin};

/// Why a download failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The mirror answered with an error status.
    #[error("{url}: the mirror answered HTTP {status}{hint}")]
    Status {
        /// The URL.
        url: String,
        /// HTTP status.
        status: u16,
        /// What to do.
        hint: &'static str,
    },
    /// The connection failed (after retries).
    #[error("{url}: {message} (after {attempts} attempts)")]
    Transport {
        /// The URL.
        url: String,
        /// What failed.
        message: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The content is not what the lock or the recipe pinned.
    #[error("{url}: sha256 is {got}, but {source_of_pin} pins {expected}; the mirror's file changed: check it, then update the pin")]
    Mismatch {
        /// The URL.
        url: String,
        /// What was downloaded.
        got: String,
        /// What was expected.
        expected: String,
        /// `mirror.lock` or `the task's checksum`.
        source_of_pin: &'static str,
    },
    /// The certificates to trust cannot be read.
    #[error("{0}")]
    Trust(String),
    /// `--locked` and the artifact is not pinned.
    #[error("{url}: not pinned in mirror.lock and the build is --locked; run `imgbuild mirror lock` and commit mirror.lock")]
    NotPinned {
        /// The URL.
        url: String,
    },
    /// The mirror stopped sending, and a new attempt got no further.
    #[error("{url}: the mirror sent nothing for {seconds:.1} s after {received} bytes, and a new attempt got no further; check the mirror (a stalled server or proxy)")]
    Stalled {
        /// The URL.
        url: String,
        /// Bytes received before it stalled.
        received: u64,
        /// Seconds waited for the next byte.
        seconds: f64,
    },
    /// The cache could not be written.
    #[error("download cache {path}: {cause}")]
    Cache {
        /// The cache path.
        path: PathBuf,
        /// The I/O error (in the message; not a `source`, which would print it twice).
        cause: std::io::Error,
    },
}

/// How downloads behave.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Attempts per download.
    pub attempts: u32,
    /// First backoff; doubled after each failed attempt.
    pub backoff: Duration,
    /// A connection that sends nothing for this long has stalled (default 30 s).
    pub timeout: Duration,
    /// Refuse artifacts that are not in the lock.
    pub locked: bool,
    /// Attempts and timeouts for the URLs below some paths (mirror.toml's `[paths."/x/"]`).
    pub paths: Vec<PathRule>,
    /// Hosts (`host[:port]`) whose TLS certificates are taken unverified (mirror.toml's
    /// `insecure`).
    pub unverified_hosts: Vec<String>,
}

/// Settings for the URLs whose path starts with `prefix`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathRule {
    /// A URL path prefix, such as `/nvidia/`.
    pub prefix: String,
    /// Attempts per download.
    pub attempts: Option<u32>,
    /// The stall timeout.
    pub timeout: Option<Duration>,
}

impl FetchOptions {
    /// The attempts and stall timeout for `url`: the longest matching path prefix's, else the
    /// defaults.
    pub fn for_url(&self, url: &str) -> (u32, Duration) {
        let path = url
            .split_once("://")
            .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
            .unwrap_or("/");
        let rule = self
            .paths
            .iter()
            .filter(|rule| path.starts_with(&rule.prefix))
            .max_by_key(|rule| rule.prefix.len());
        (
            rule.and_then(|r| r.attempts).unwrap_or(self.attempts),
            rule.and_then(|r| r.timeout).unwrap_or(self.timeout),
        )
    }
}

impl Default for FetchOptions {
    fn default() -> Self {
        Self {
            attempts: 4,
            backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(30),
            locked: false,
            paths: Vec::new(),
            unverified_hosts: Vec::new(),
        }
    }
}

/// Called while downloading: URL, bytes so far, total when the mirror says.
pub type Progress = Box<dyn Fn(&str, u64, Option<u64>) + Send + Sync>;

/// Called with a warning.
pub type Warn = Box<dyn Fn(&str) + Send + Sync>;

/// The download cache and the lock of one build (or several).
pub struct Fetcher {
    cache: PathBuf,
    lock: Mutex<Lock>,
    options: FetchOptions,
    agents: net::Agents,
    progress: Option<Progress>,
    warn: Option<Warn>,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("cache", &self.cache)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn cache_err(path: &Path) -> impl FnOnce(std::io::Error) -> FetchError + '_ {
    move |cause| FetchError::Cache {
        path: path.to_owned(),
        cause,
    }
}

/// The hex sha256 of a file's bytes.
fn file_sha256(path: &Path) -> std::io::Result<String> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hex(&hasher.finalize()))
}

/// HTTP agents whose reads time out after `timeout` without a byte (a stall), trusting what
/// the system trusts and going through the environment's proxies.
fn agents(timeout: Duration, unverified: &[String]) -> Result<net::Agents, FetchError> {
    let trust_error = |e: net::TrustError| FetchError::Trust(e.to_string());
    let agents = net::Agents::system(net::Limits {
        connect: Duration::from_secs(10),
        read: Some(timeout),
        total: None,
        redirects: 5,
    })
    .map_err(trust_error)?;
    if unverified.is_empty() {
        return Ok(agents);
    }
    let trust = net::Trust::system().map_err(trust_error)?;
    agents
        .without_verification_for(unverified, &trust, "mirror.toml")
        .map_err(trust_error)
}

/// A failed connection: tried again, unless it is an untrusted certificate or a refusing
/// proxy, which do not mend by themselves.
fn transport_attempt(t: &ureq::Transport, url: &str) -> Attempt {
    let message = net::explain(t, url);
    if message == t.to_string() {
        return Attempt::Retry(message);
    }
    Attempt::Fatal(FetchError::Transport {
        url: url.into(),
        message,
        attempts: 1,
    })
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

impl Fetcher {
    /// A fetcher storing files under `cache` (created if missing) and pinning in `lock`.
    pub fn new(cache: &Path, lock: Lock, options: FetchOptions) -> Result<Self, FetchError> {
        for sub in ["sha256", "partial"] {
            std::fs::create_dir_all(cache.join(sub)).map_err(cache_err(cache))?;
        }
        Ok(Self {
            cache: cache.to_owned(),
            lock: Mutex::new(lock),
            agents: agents(options.timeout, &options.unverified_hosts)?,
            options,
            progress: None,
            warn: None,
        })
    }

    /// Tells `warn` what a person should know that does not fail the fetch (a damaged cached
    /// copy dropped).
    pub fn with_warnings(mut self, warn: Warn) -> Self {
        self.warn = Some(warn);
        self
    }

    fn warn(&self, message: &str) {
        if let Some(warn) = &self.warn {
            warn(message);
        }
    }

    /// Reports download progress to `progress` (about ten times a second).
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = Some(progress);
        self
    }

    /// The lock with every pin added so far.
    pub fn lock(&self) -> Lock {
        self.lock.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn cached(&self, sha256: &str) -> PathBuf {
        self.cache.join("sha256").join(sha256)
    }

    /// Downloads `url` (unless the cache already holds the pinned content) and returns the cached
    /// file. `expected` is a sha256 the task itself pins (`checksum:`).
    pub fn fetch(&self, url: &str, expected: Option<&str>) -> Result<PathBuf, FetchError> {
        let pinned = self
            .lock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(url)
            .cloned();
        if let (Some(pin), Some(expected)) = (&pinned, expected) {
            if pin.sha256 != expected {
                return Err(FetchError::Mismatch {
                    url: url.into(),
                    got: pin.sha256.clone(),
                    expected: expected.into(),
                    source_of_pin: "the task's checksum",
                });
            }
        }
        if pinned.is_none() && self.options.locked {
            return Err(FetchError::NotPinned { url: url.into() });
        }
        let want = pinned
            .as_ref()
            .map(|p| p.sha256.clone())
            .or(expected.map(str::to_owned));
        if let Some(sha) = &want {
            let path = self.cached(sha);
            if path.is_file() {
                // Checked in full before use: a damaged copy is dropped and fetched again.
                match file_sha256(&path) {
                    Ok(actual) if &actual == sha => return Ok(path),
                    _ => {
                        let _ = std::fs::remove_file(&path);
                        self.warn(&format!(
                            "the cached copy of {url} no longer has its sha256 {sha}; dropped it, downloading again"
                        ));
                    }
                }
            }
        }
        let (sha, size, path) = self.download(url)?;
        if let Some(pin) = &pinned {
            if pin.sha256 != sha {
                let _ = std::fs::remove_file(&path);
                return Err(FetchError::Mismatch {
                    url: url.into(),
                    got: sha,
                    expected: pin.sha256.clone(),
                    source_of_pin: "mirror.lock",
                });
            }
        } else if let Some(expected) = expected {
            if expected != sha {
                // Not what the task pinned: it must not stay in the cache for a later build.
                let _ = std::fs::remove_file(&path);
                return Err(FetchError::Mismatch {
                    url: url.into(),
                    got: sha,
                    expected: expected.into(),
                    source_of_pin: "the task's checksum",
                });
            }
        }
        if pinned.is_none() {
            self.lock
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(url, Pin { size, sha256: sha });
        }
        Ok(path)
    }

    /// Downloads into the partial file (resuming it), then moves it to its sha256 name.
    fn download(&self, url: &str) -> Result<(String, u64, PathBuf), FetchError> {
        let partial = self
            .cache
            .join("partial")
            .join(hex(&Sha256::digest(url.as_bytes())));
        let mut last = String::new();
        let mut backoff = self.options.backoff;
        let (attempts, timeout) = self.options.for_url(url);
        let agents = if timeout == self.options.timeout {
            self.agents.clone()
        } else {
            agents(timeout, &self.options.unverified_hosts)?
        };
        let agent = agents.for_url(url).map_err(|e| FetchError::Transport {
            url: url.into(),
            message: e.message,
            attempts: 0,
        })?;
        // A stalled attempt is tried again only while attempts get further than the last one.
        let mut furthest = std::fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
        let mut attempt = 1;
        while attempt <= attempts {
            match self.attempt(&agent, url, &partial) {
                Ok(done) => return self.finish(&partial, done),
                Err(Attempt::Fatal(e)) => {
                    let _ = std::fs::remove_file(&partial);
                    return Err(e);
                }
                Err(Attempt::Stalled { received }) if received > furthest => {
                    furthest = received;
                    continue;
                }
                Err(Attempt::Stalled { received }) => {
                    return Err(FetchError::Stalled {
                        url: url.into(),
                        received,
                        seconds: timeout.as_secs_f64(),
                    })
                }
                Err(Attempt::Retry(message)) => last = message,
            }
            if attempt < attempts {
                std::thread::sleep(backoff);
                backoff *= 2;
            }
            attempt += 1;
        }
        Err(FetchError::Transport {
            url: url.into(),
            message: last,
            attempts,
        })
    }

    fn finish(&self, partial: &Path, size: u64) -> Result<(String, u64, PathBuf), FetchError> {
        let sha = file_sha256(partial).map_err(cache_err(partial))?;
        let path = self.cached(&sha);
        std::fs::rename(partial, &path).map_err(cache_err(&path))?;
        Ok((sha, size, path))
    }

    /// One try at downloading `url` into `partial`, resuming what an earlier try left there;
    /// the size of the whole file when it came whole.
    fn attempt(&self, agent: &ureq::Agent, url: &str, partial: &Path) -> Result<u64, Attempt> {
        let have = std::fs::metadata(partial).map(|m| m.len()).unwrap_or(0);
        let response = request(agent, url, partial, have)?;
        let resumed = response.status() == 206;
        let declared: Option<u64> = response
            .header("Content-Length")
            .and_then(|v| v.parse().ok());
        let mut file = open_partial(partial, resumed)?;
        let base = if resumed { have } else { 0 };
        let total = declared.map(|d| d + base);
        let received = self.receive(response, &mut file, url, partial, base, total)?;
        file.sync_all().map_err(fatal_cache(partial))?;
        if let Some(progress) = &self.progress {
            progress(url, base + received, total);
        }
        if let Some(declared) = declared {
            if received != declared {
                return Err(Attempt::Retry(format!(
                    "got {received} of {declared} bytes"
                )));
            }
        }
        Ok(base + received)
    }

    /// Copies the response's body into `file`, reporting progress (`base` bytes were there
    /// before) at most every 100 ms; the bytes received.
    fn receive(
        &self,
        response: ureq::Response,
        file: &mut File,
        url: &str,
        partial: &Path,
        base: u64,
        total: Option<u64>,
    ) -> Result<u64, Attempt> {
        let mut reader = response.into_reader();
        let mut buffer = vec![0u8; 1 << 20];
        let mut received = 0u64;
        let mut last_report = std::time::Instant::now();
        loop {
            if let Some(progress) = &self.progress {
                if last_report.elapsed() >= Duration::from_millis(100) {
                    progress(url, base + received, total);
                    last_report = std::time::Instant::now();
                }
            }
            let n = match reader.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
                    ) =>
                {
                    return Err(Attempt::Stalled {
                        received: base + received,
                    })
                }
                Err(e) => {
                    return Err(Attempt::Retry(format!(
                        "the transfer broke after {received} bytes: {e}"
                    )))
                }
            };
            file.write_all(&buffer[..n]).map_err(fatal_cache(partial))?;
            received += n as u64;
        }
        Ok(received)
    }
}

/// Asks the mirror for `url` (from byte `have` on, when a partial file holds that many) and
/// sorts its refusals: worth another try (5xx, 429, 408, a stale partial file) or not.
fn request(
    agent: &ureq::Agent,
    url: &str,
    partial: &Path,
    have: u64,
) -> Result<ureq::Response, Attempt> {
    let mut request = agent.get(url);
    if have > 0 {
        request = request.set("Range", &format!("bytes={have}-"));
    }
    match request.call() {
        Ok(response) => Ok(response),
        Err(ureq::Error::Status(416, _)) if have > 0 => {
            let _ = std::fs::remove_file(partial);
            Err(Attempt::Retry(
                "the partial file no longer matches the mirror's".into(),
            ))
        }
        Err(ureq::Error::Status(status, _)) if status >= 500 || status == 429 || status == 408 => {
            Err(Attempt::Retry(format!("HTTP {status}")))
        }
        Err(ureq::Error::Status(status, _)) => {
            let hint = match status {
                404 => "; the file is not on the mirror: check the version in the recipe, or upload the file",
                401 | 403 => "; the mirror refused access",
                _ => "",
            };
            Err(Attempt::Fatal(FetchError::Status {
                url: url.into(),
                status,
                hint,
            }))
        }
        Err(ureq::Error::Transport(t)) if t.kind() == ureq::ErrorKind::TooManyRedirects => {
            // A redirect loop does not mend itself: no retry.
            Err(Attempt::Fatal(FetchError::Transport {
                url: url.into(),
                message: "too many redirects (a redirect loop on the mirror?)".into(),
                attempts: 1,
            }))
        }
        Err(ureq::Error::Transport(t)) => Err(transport_attempt(&t, url)),
    }
}

/// Opens the partial file: appended to when the mirror resumed, else written from the start.
fn open_partial(partial: &Path, resumed: bool) -> Result<File, Attempt> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(resumed)
        .write(true)
        .truncate(!resumed)
        .open(partial)
        .map_err(fatal_cache(partial))?;
    if !resumed {
        file.rewind().map_err(fatal_cache(partial))?;
    }
    Ok(file)
}

/// A cache file that cannot be written: no retry mends it.
fn fatal_cache(path: &Path) -> impl FnOnce(std::io::Error) -> Attempt + '_ {
    move |cause| Attempt::Fatal(cache_err(path)(cause))
}

enum Attempt {
    Retry(String),
    /// No byte came for the read timeout; `received` bytes are in the partial file.
    Stalled {
        received: u64,
    },
    Fatal(FetchError),
}
