//! `imgbuild apply`: run an image's plan in an existing rootfs folder.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use engine::events::Reporter;
use engine::executor::{ExecOptions, Executor};
use engine::sandbox::ChrootTarget;
use planner::{PlanOptions, Project};

use super::session::{describe_failure, downloads, reporter, save_lock};
use crate::cli::ApplyArgs;
use crate::Failure;

/// Runs `args.image`'s plan in `args.root`.
pub fn run(
    project: &Project,
    args: &ApplyArgs,
    opts: &PlanOptions,
    json: bool,
) -> Result<ExitCode, Failure> {
    // Under --check, roles see ansible_check_mode true, also where the plan decides on it.
    let mut opts = opts.clone();
    if args.check {
        opts.extra_vars
            .insert("ansible_check_mode".into(), serde_json::Value::Bool(true));
    }
    let plan = planner::plan(project, &args.image, &opts)?;
    super::output::print_warnings(&plan.warnings);
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
    let reporter: std::sync::Arc<dyn Reporter> = reporter(json).into();
    let (downloads, lock) = downloads(&project.root, args.locked, args.timeout, reporter.clone())?;
    let exe = std::env::current_exe()
        .context("finding the imgbuild binary")
        .map_err(Failure::Run)?;
    let kernel = plan.intent.kernel.clone().unwrap_or_default();
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
            .map_err(|e| Failure::Run(anyhow!(e)))?
            .with_output(reporter.output_sink());
        let result = executor.run_role(role, &target);
        target.stop();
        if let Err(failure) = result {
            outcome = Err(Failure::Run(describe_failure(&failure)));
            break;
        }
    }
    if !args.check {
        save_lock(&project.root, &downloads, &lock)?;
    }
    outcome.map(|()| ExitCode::SUCCESS)
}

fn set_sticky(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o1777));
}
