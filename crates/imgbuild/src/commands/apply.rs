//! `imgbuild apply`: run an image's plan in an existing rootfs folder.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use engine::events::{JsonReporter, PlainReporter, Reporter, TerminalReporter};
use engine::executor::{ExecOptions, Executor, TaskFailure};
use engine::modules::Downloader;
use engine::sandbox::ChrootTarget;
use mirror::{FetchOptions, Fetcher, Lock};
use planner::{PlanOptions, Project};

use crate::cli::ApplyArgs;
use crate::Failure;

/// The site mirror's downloads, for the engine.
pub struct MirrorDownloads(pub Fetcher);

impl Downloader for MirrorDownloads {
    fn fetch(&self, url: &str, sha256: Option<&str>) -> Result<PathBuf, String> {
        self.0.fetch(url, sha256).map_err(|e| e.to_string())
    }
}

/// The cache folder shared by all builds: `$IMGBUILD_CACHE`, else `$XDG_CACHE_HOME/imgbuild`,
/// else `~/.cache/imgbuild`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("IMGBUILD_CACHE") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("imgbuild");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"));
    home.join(".cache/imgbuild")
}

/// The reporter for this run: JSON events, plain lines in CI, or a live terminal line.
pub fn reporter(json: bool) -> Box<dyn Reporter> {
    if json {
        Box::new(JsonReporter)
    } else if std::env::var_os("CI").is_some() || !std::io::stderr().is_terminal() {
        Box::new(PlainReporter)
    } else {
        Box::new(TerminalReporter::new())
    }
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

/// Runs `args.image`'s plan in `args.root`.
pub fn run(
    project: &Project,
    args: &ApplyArgs,
    opts: &PlanOptions,
    json: bool,
) -> Result<ExitCode, Failure> {
    let plan = planner::plan(project, &args.image, opts)?;
    super::print_warnings(&plan.warnings);
    let root = args
        .root
        .canonicalize()
        .map_err(|e| Failure::Input(anyhow!("--root {}: {e}", args.root.display())))?;
    let roles: Vec<String> = if args.roles.is_empty() {
        plan.roles.clone()
    } else {
        for role in &args.roles {
            if !plan.roles.contains(role) {
                return Err(Failure::Input(anyhow!(
                    "role '{role}' is not in {}'s roles: {}",
                    plan.image,
                    plan.roles.join(", ")
                )));
            }
        }
        args.roles.clone()
    };
    let probe = engine::rootfs::RootFs::new(&root, &root)
        .map_err(|e| Failure::Input(anyhow!("{}: {e}", root.display())))?;
    engine::facts_check::check(&probe, &plan.facts)
        .map_err(|e| Failure::Input(anyhow!("{}: {e}", root.display())))?;
    let lock_path = project.root.join("mirror.lock");
    let lock = Lock::load(&lock_path).map_err(|e| Failure::Input(anyhow!(e)))?;
    let fetch_options = FetchOptions {
        locked: args.locked,
        ..FetchOptions::default()
    };
    let reporter: std::sync::Arc<dyn Reporter> = reporter(json).into();
    let progress_reporter = reporter.clone();
    let fetcher = Fetcher::new(&cache_dir().join("downloads"), lock.clone(), fetch_options)
        .map_err(|e| Failure::Run(anyhow!(e)))?
        .with_progress(Box::new(move |url, bytes, total| {
            progress_reporter.event(&engine::events::Event::Download {
                url: url.to_owned(),
                bytes,
                total,
            });
        }));
    let downloads = MirrorDownloads(fetcher);
    let exe = std::env::current_exe()
        .context("finding the imgbuild binary")
        .map_err(Failure::Run)?;
    let kernel = plan
        .facts
        .get("ansible_kernel")
        .and_then(|k| k.as_str())
        .unwrap_or_default()
        .to_owned();
    let options = ExecOptions {
        check: args.check,
        diff: args.diff,
    };
    let mut executor = Executor::new(&plan, &project.root, &downloads, reporter.as_ref(), options);
    let mut outcome = Ok(());
    for role in &roles {
        let scratch = tempfile::Builder::new()
            .prefix("imgbuild-tmp-")
            .tempdir()
            .context("creating the build's /tmp")
            .map_err(Failure::Run)?;
        set_sticky(scratch.path());
        let target = ChrootTarget::start(&exe, &root, scratch.path(), &kernel)
            .map_err(|e| Failure::Run(anyhow!(e)))?;
        let result = executor.run_role(role, &target);
        target.stop();
        if let Err(failure) = result {
            outcome = Err(Failure::Run(describe_failure(&failure)));
            break;
        }
    }
    let pinned = downloads.0.lock();
    if pinned != lock && !args.check {
        pinned
            .save(&lock_path)
            .with_context(|| format!("writing {}", lock_path.display()))
            .map_err(Failure::Run)?;
    }
    outcome.map(|()| ExitCode::SUCCESS)
}

fn set_sticky(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o1777));
}
