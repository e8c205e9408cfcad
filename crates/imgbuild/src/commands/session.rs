//! What the commands that run tasks share: the cache folder, the reporter, downloads, and
//! how a failed task is told.

use std::path::PathBuf;

use anyhow::anyhow;
use engine::events::Reporter;
use engine::executor::TaskFailure;
use engine::modules::{DownloadError, Downloader};
use mirror::Fetcher;

/// The site mirror's downloads, for the engine.
pub struct MirrorDownloads(pub Fetcher);

impl Downloader for MirrorDownloads {
    fn fetch(&self, url: &str, sha256: Option<&str>) -> Result<PathBuf, DownloadError> {
        self.0.fetch(url, sha256).map_err(|e| DownloadError {
            status: match e {
                mirror::FetchError::Status { status, .. } => Some(status),
                _ => None,
            },
            message: e.to_string(),
        })
    }
}

/// The cache folder shared by all builds: `$IMGBUILD_CACHE`, else the site config's
/// `cache_dir`, else `$XDG_CACHE_HOME/imgbuild`, else `~/.cache/imgbuild`.
pub fn cache_dir() -> PathBuf {
    crate::settings::cache_dir().value
}

/// Fails with one line and exit 2 when `dir` (created if missing) cannot be written: a
/// read-only filesystem, a folder imgbuild may not write. `what` names it and `instead` says
/// what to do. Checked before any work, so nothing is built only to fail at its end.
pub fn ensure_writable(
    dir: &std::path::Path,
    what: &str,
    instead: &str,
) -> Result<(), crate::Failure> {
    let refuse = |e: std::io::Error| {
        crate::Failure::Input(anyhow!(
            "{what} {} cannot be written ({e}); {instead}",
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(refuse)?;
    tempfile::tempfile_in(dir).map(drop).map_err(refuse)
}

/// The size the cache is kept under: `given` (a `--cache-max` or `--max`, or
/// `$IMGBUILD_CACHE_MAX`), else the site config's `cache_max`, else a tenth of the cache's
/// filesystem.
pub fn cache_limit(given: Option<u64>) -> Result<u64, crate::Failure> {
    let flags = crate::settings::Flags {
        cache_max: given,
        ..Default::default()
    };
    let settings = crate::settings::in_force(None, &flags)?;
    Ok(settings
        .cache_max
        .value
        .unwrap_or_else(|| image::cache::default_limit(&settings.cache_dir.value)))
}

/// Keeps the cache under `limit` after builds that started at `since`, and says what it
/// removed (nothing while another build still holds the cache: that one collects).
pub fn collect_cache(limit: u64, since: std::time::SystemTime, json: bool) {
    let Ok(cache) = image::cache::LayerCache::new(&cache_dir()) else {
        return;
    };
    match cache.collect(limit, since) {
        Ok(Some(done)) if done.layers + done.blobs > 0 && !crate::progress::mode::quiet() => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({"event": "cache_collected", "layers": done.layers, "blobs": done.blobs, "freed": done.freed, "held": done.held, "limit": limit})
                );
            } else {
                eprintln!(
                    "cache: removed {} least recently used layers and {} unused blobs ({:.1} GB) to stay under {:.1} GB; it holds {:.1} GB",
                    done.layers,
                    done.blobs,
                    done.freed as f64 / 1e9,
                    limit as f64 / 1e9,
                    done.held as f64 / 1e9
                );
            }
        }
        Ok(_) => {}
        Err(e) => eprintln!(
            "warning: keeping {} under its size: {e}",
            cache_dir().display()
        ),
    }
}

/// The reporter of a run that builds no image (`apply`, `mirror`): JSON events, plain lines
/// in CI, or a live terminal line.
pub fn reporter(json: bool) -> Box<dyn Reporter> {
    Box::new(crate::progress::ForImage::new(
        crate::progress::display(json, false),
        None,
        &[],
    ))
}

/// Explains a failed task: role, task, source line, command, exit code, last output lines.
pub fn describe_failure(f: &TaskFailure) -> anyhow::Error {
    let mut text = format!(
        "task failed: {} › {} ({})\n  module: {}",
        f.role, f.task, f.source_line, f.module
    );
    if let Some(cmd) = &f.command {
        text.push_str(&format!("\n  command: {cmd}"));
    }
    if let Some(rc) = f.rc {
        text.push_str(&format!("\n  exit code: {rc}"));
    }
    text.push_str(&format!("\n  {}", f.msg.replace('\n', "\n  ")));
    if !f.output_tail.is_empty() {
        text.push_str("\n  last lines of output:");
        for line in &f.output_tail {
            text.push_str(&format!("\n    {line}"));
        }
    }
    anyhow!(text)
}

/// The project's `mirror.lock`, a fetcher pinning into it with mirror.toml's attempts and
/// timeouts (`timeout`, from `--timeout`, over them), reporting progress to `reporter`, and the
/// lock as it was (to tell whether it changed).
pub fn downloads(
    project_root: &std::path::Path,
    locked: bool,
    timeout: Option<u64>,
    reporter: std::sync::Arc<dyn Reporter>,
) -> Result<(MirrorDownloads, mirror::Lock), crate::Failure> {
    ensure_writable(
        &cache_dir(),
        "the cache folder",
        "set IMGBUILD_CACHE to a folder on a writable filesystem",
    )?;
    let lock = load_lock(project_root)?;
    let config = mirror::MirrorConfig::load(&project_root.join("mirror.toml"))
        .map_err(|e| crate::Failure::Input(anyhow!(e)))?;
    let options = config.fetch_options(locked, timeout);
    let fetcher = Fetcher::new(&cache_dir().join("downloads"), lock.clone(), options)
        .map_err(|e| crate::Failure::Run(anyhow!(e)))?
        .with_warnings(Box::new(|message| {
            eprintln!("warning: {}", planner::vault::redact(message))
        }))
        .with_progress(Box::new(move |url, bytes, total| {
            reporter.event(&engine::events::Event::Download {
                url: url.to_owned(),
                bytes,
                total,
            });
        }));
    Ok((MirrorDownloads(fetcher), lock))
}

/// The project's `mirror.lock` (empty when there is none); errors name it relative to the root.
pub fn load_lock(project_root: &std::path::Path) -> Result<mirror::Lock, crate::Failure> {
    mirror::Lock::load(&project_root.join("mirror.lock")).map_err(|e| match e {
        mirror::LockError::Invalid { message, .. } => {
            crate::Failure::Input(anyhow!("mirror.lock: {message}"))
        }
    })
}

/// Writes the pins the run added to `mirror.lock`.
pub fn save_lock(
    project_root: &std::path::Path,
    downloads: &MirrorDownloads,
    before: &mirror::Lock,
) -> Result<(), crate::Failure> {
    let pinned = downloads.0.lock();
    if pinned != *before {
        let path = project_root.join("mirror.lock");
        pinned
            .save(&path)
            .map_err(|e| crate::Failure::Run(anyhow!("writing {}: {e}", path.display())))?;
    }
    Ok(())
}

/// Seconds for every timestamp of an image: `SOURCE_DATE_EPOCH`, else the commit time of the
/// newest commit touching the plan's inputs, else the newest input's modification time.
pub fn source_date_epoch(
    project_root: &std::path::Path,
    inputs: &[String],
) -> Result<u64, crate::Failure> {
    if let Ok(value) = std::env::var("SOURCE_DATE_EPOCH") {
        return value.trim().parse().map_err(|_| {
            crate::Failure::Input(anyhow!(
                "SOURCE_DATE_EPOCH '{value}' is not a number of seconds"
            ))
        });
    }
    let git = std::process::Command::new("git")
        .arg("-C")
        .arg(project_root)
        .args(["log", "-1", "--format=%ct", "--"])
        .args(inputs)
        .output();
    if let Ok(out) = git {
        if let Ok(seconds) = String::from_utf8_lossy(&out.stdout).trim().parse::<u64>() {
            return Ok(seconds);
        }
    }
    Ok(inputs
        .iter()
        .filter_map(|f| {
            std::fs::metadata(project_root.join(f))
                .ok()?
                .modified()
                .ok()
        })
        .filter_map(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
        .max()
        .unwrap_or(0))
}
