//! `imgbuild mirror`: serve a folder, check that every artifact the images need is on the
//! mirror, and pin what is not pinned yet.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::anyhow;
use mirror::{Lock, Presence, Prober};
use planner::{PlanOptions, Project};
use serde::Serialize;

use super::session::{downloads, reporter, save_lock};
use crate::Failure;

/// Serves `dir` over HTTP on `addr` until killed.
pub fn serve(dir: &Path, addr: &str) -> Result<ExitCode, Failure> {
    if !dir.is_dir() {
        return Err(Failure::Input(anyhow!("{}: not a folder", dir.display())));
    }
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| Failure::Input(anyhow!("cannot listen on {addr}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Failure::Run(anyhow!(e)))?;
    println!("serving {} at http://{bound}/", dir.display());
    mirror::serve::serve(listener, dir);
    Ok(ExitCode::SUCCESS)
}

/// One artifact some image downloads.
#[derive(Debug, Serialize)]
struct Artifact {
    url: String,
    /// The images that download it.
    images: Vec<String>,
    /// `path:line` of the first task that downloads it.
    source: String,
}

/// A download whose URL only the build knows.
#[derive(Debug, Serialize)]
struct Unknown {
    image: String,
    source: String,
}

/// Every artifact of `images` (all images when empty), each once, sorted by URL.
fn artifacts(
    project: &Project,
    images: &[String],
    opts: &PlanOptions,
) -> Result<(Vec<Artifact>, Vec<Unknown>), Failure> {
    let images = if images.is_empty() {
        project.images()?
    } else {
        images.to_vec()
    };
    let mut by_url: BTreeMap<String, Artifact> = BTreeMap::new();
    let mut unknown = Vec::new();
    for image in images {
        let plan = planner::plan(project, &image, opts)?;
        for (url, task) in plan.downloads() {
            let entry = by_url.entry(url.clone()).or_insert_with(|| Artifact {
                url,
                images: Vec::new(),
                source: task.source.clone(),
            });
            if !entry.images.contains(&image) {
                entry.images.push(image.clone());
            }
        }
        for task in plan.all_tasks() {
            if task.downloads_unknown_url() {
                unknown.push(Unknown {
                    image: image.clone(),
                    source: task.source.clone(),
                });
            }
        }
    }
    Ok((by_url.into_values().collect(), unknown))
}

/// What `mirror check` found for one artifact.
#[derive(Debug, Serialize)]
struct Checked {
    #[serde(flatten)]
    artifact: Artifact,
    present: bool,
    /// HTTP status when missing, or the transport error.
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
    size: Option<u64>,
    pinned: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pinned_size: Option<u64>,
    ok: bool,
}

fn check_one(artifact: Artifact, prober: &Prober, lock: &Lock) -> Checked {
    let pin = lock.get(&artifact.url);
    let (present, size, mut problem) = match prober.probe(&artifact.url) {
        Presence::Present(size) => (true, size, None),
        Presence::Missing(code) => (false, None, Some(format!("HTTP {code}"))),
        Presence::Unreachable(why) => (false, None, Some(why)),
    };
    if let (Some(pin), Some(size)) = (pin, size) {
        if pin.size != size {
            problem = Some(format!(
                "the mirror has {size} bytes but mirror.lock pins {}; the file changed on the mirror",
                pin.size
            ));
        }
    }
    Checked {
        ok: problem.is_none(),
        pinned: pin.is_some(),
        pinned_size: pin.map(|p| p.size),
        artifact,
        present,
        problem,
        size,
    }
}

fn table(rows: &[Checked]) -> String {
    let header = ["status", "pinned", "size", "url", "images"].map(String::from);
    let mut lines = vec![header];
    for row in rows {
        let status = match (&row.problem, row.present) {
            (None, _) => "ok",
            (Some(_), true) => "CHANGED",
            (Some(_), false) => "MISSING",
        };
        lines.push([
            status.to_owned(),
            if row.pinned { "yes" } else { "no" }.to_owned(),
            row.size.map_or("-".into(), |s| s.to_string()),
            row.artifact.url.clone(),
            row.artifact.images.join(","),
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| lines.iter().map(|l| l[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for line in lines {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    for row in rows {
        if let Some(problem) = &row.problem {
            out.push_str(&format!(
                "{}: {problem} (downloaded by {})\n",
                row.artifact.url, row.artifact.source
            ));
        }
    }
    out
}

/// Checks every artifact of `images` on the mirror; exit 1 when one is missing.
pub fn check(
    project: &Project,
    images: &[String],
    opts: &PlanOptions,
    json: bool,
) -> Result<ExitCode, Failure> {
    let (artifacts, unknown) = artifacts(project, images, opts)?;
    let lock = super::session::load_lock(&project.root)?;
    let prober = Prober::default();
    let rows: Vec<Checked> = artifacts
        .into_iter()
        .map(|a| check_one(a, &prober, &lock))
        .collect();
    let ok = rows.iter().all(|r| r.ok);
    if json {
        let report = serde_json::json!({ "ok": ok, "artifacts": rows, "unknown": unknown });
        println!("{}", mirror::redact_credentials(&format!("{report:#}")));
    } else {
        print!("{}", mirror::redact_credentials(&table(&rows)));
        for u in &unknown {
            eprintln!(
                "note: {} ({}): the URL is known only at build time; not checked",
                u.source, u.image
            );
        }
        let missing = rows.iter().filter(|r| !r.ok).count();
        println!(
            "{} artifacts, {} pinned, {missing} missing",
            rows.len(),
            rows.iter().filter(|r| r.pinned).count()
        );
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Downloads every artifact of `images` that `mirror.lock` does not pin yet, and pins it.
pub fn lock(
    project: &Project,
    images: &[String],
    opts: &PlanOptions,
    timeout: Option<u64>,
    json: bool,
) -> Result<ExitCode, Failure> {
    let (artifacts, unknown) = artifacts(project, images, opts)?;
    let events: Arc<dyn engine::events::Reporter> = Arc::from(reporter(json));
    let (fetcher, before) = downloads(&project.root, false, timeout, events)?;
    let mut failed = Vec::new();
    let mut added = 0;
    for artifact in &artifacts {
        if before.get(&artifact.url).is_some() {
            continue;
        }
        match fetcher.0.fetch(&artifact.url, None) {
            Ok(_) => {
                added += 1;
                if let Some(pin) = fetcher.0.lock().get(&artifact.url) {
                    println!(
                        "pinned {} ({} bytes, sha256 {})",
                        mirror::url_path(&artifact.url),
                        pin.size,
                        pin.sha256
                    );
                }
            }
            Err(e) => failed.push(mirror::redact_credentials(&format!(
                "{}: {e}",
                artifact.url
            ))),
        }
    }
    save_lock(&project.root, &fetcher, &before)?;
    for u in &unknown {
        eprintln!(
            "note: {} ({}): the URL is known only at build time; a build will pin it",
            u.source, u.image
        );
    }
    println!(
        "{added} pinned, {} already pinned, {} failed",
        artifacts.len() - added - failed.len(),
        failed.len()
    );
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(Failure::Run(anyhow!(
            "could not pin:\n  {}",
            failed.join("\n  ")
        )))
    }
}
