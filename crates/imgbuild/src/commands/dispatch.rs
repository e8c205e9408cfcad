//! Which command runs: the parsed command line, to the module of its command.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::anyhow;
use clap::CommandFactory;
use indexmap::IndexMap;
use planner::{PlanOptions, Project, TagFilter};

use super::{
    affected, apply, boot, build, cache, config_cmd, lint, list, man_pages, matrix, mirror_cmd,
    plan, sbom, verify,
};
use crate::cli::{Cli, Command, MatrixAction, MirrorAction, VarArgs};
use crate::Failure;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode, Failure> {
    let json = cli.json();
    crate::progress::mode::set(cli.progress_mode());
    if !matches!(
        cli.command,
        Command::Completions { .. } | Command::ManPages { .. }
    ) {
        // A bad site defaults file is bad input for every command, as podman's containers.conf.
        crate::settings::site_files()?;
    }
    if let Some(code) = super::unprivileged::run_inside_if_needed(&cli.command)? {
        return Ok(code);
    }
    match cli.command {
        Command::Completions { shell } => {
            let mut command = Cli::command();
            clap_complete::generate(shell, &mut command, "imgbuild", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::ManPages { dir } => man_pages::write(&dir),
        Command::Config => {
            let project = maybe_project(cli.dir.as_deref())?;
            config_cmd::run(project.as_ref().map(|p| p.root.as_path()), json)
        }
        Command::List => list::run(&project(cli.dir.as_deref())?, json),
        Command::Plan(args) => {
            let opts = plan_options(&args.vars)?;
            match (&args.role, &args.image) {
                (Some(role), _) => plan::run_role(role, &args.os, cli.dir.as_deref(), &opts, json),
                (None, Some(image)) => plan::run(&project(cli.dir.as_deref())?, image, &opts, json),
                (None, None) => Err(Failure::Input(anyhow!("name an image, or --role PATH"))),
            }
        }
        Command::Lint(args) => lint::run(&project(cli.dir.as_deref())?, &args.images, json),
        Command::Build(args) => {
            let project = project(cli.dir.as_deref())?;
            let opts = plan_options(&args.vars)?;
            build::run(&project, &args, &opts, json)
        }
        Command::Cache(args) => cache::run(&args, json),
        Command::Verify(args) => verify::run(&args, json),
        Command::Sbom(args) => sbom::run(&args),
        Command::Boot(args) => boot::run(&args, json),
        Command::Mirror(args) => match args.action {
            MirrorAction::Serve { dir, addr } => mirror_cmd::serve(&dir, &addr),
            MirrorAction::Check(args) => {
                let project = project(cli.dir.as_deref())?;
                let opts = mirror_options(args.mirror)?;
                mirror_cmd::check(&project, &args.images, &opts, json)
            }
            MirrorAction::Lock(args) => {
                let project = project(cli.dir.as_deref())?;
                let opts = mirror_options(args.mirror)?;
                mirror_cmd::lock(&project, &args.images, &opts, args.timeout, json)
            }
        },
        Command::Affected(args) => affected::run(&project(cli.dir.as_deref())?, &args.since, json),
        Command::Apply(args) => {
            let project = project(cli.dir.as_deref())?;
            let opts = plan_options(&args.vars)?;
            apply::run(&project, &args, &opts, json)
        }
        Command::Matrix(args) => {
            let project = project(cli.dir.as_deref())?;
            match args.action {
                Some(MatrixAction::Set(set)) => matrix::set(&project, &set),
                None => {
                    let format = if json {
                        crate::cli::MatrixFormat::Json
                    } else {
                        args.format
                    };
                    matrix::run(&project, format, args.diff.as_deref())
                }
            }
        }
    }
}

/// `-C DIR` as an absolute path, so the project's root is one wherever it is used: a `pipe`
/// command runs in the playbook's folder and finds the `role_path` it is given, as under
/// Ansible, however DIR was written.
fn absolute(dir: &Path) -> Result<PathBuf, Failure> {
    std::path::absolute(dir).map_err(|e| Failure::Run(anyhow!("-C {}: {e}", dir.display())))
}

/// The project in `dir`, or the one the current folder is in.
fn project(dir: Option<&Path>) -> Result<Project, Failure> {
    match dir {
        Some(dir) => Ok(Project::at(&absolute(dir)?)?),
        None => {
            let cwd: PathBuf = std::env::current_dir()
                .map_err(|e| Failure::Run(anyhow!("cannot read the current directory: {e}")))?;
            Project::discover(&cwd).ok_or_else(|| {
                Failure::Input(anyhow!(
                    "no images/ folder in {} or above; run imgbuild inside a project or pass -C DIR",
                    cwd.display()
                ))
            })
        }
    }
}

/// The project in `dir`, or the one the current folder is in if any.
fn maybe_project(dir: Option<&Path>) -> Result<Option<Project>, Failure> {
    match dir {
        Some(dir) => Ok(Some(Project::at(&absolute(dir)?)?)),
        None => Ok(std::env::current_dir()
            .ok()
            .and_then(|cwd| Project::discover(&cwd))),
    }
}

/// Plan options for the mirror commands: only `--mirror` is given.
fn mirror_options(mirror: Option<String>) -> Result<PlanOptions, Failure> {
    plan_options(&VarArgs {
        mirror,
        ..VarArgs::default()
    })
}

/// Plan options from the command line's variables: vault passwords, extra vars, tags, mirror.
fn plan_options(vars: &VarArgs) -> Result<PlanOptions, Failure> {
    let vault = planner::vault::load(
        &planner::vault::PasswordSources {
            vault_ids: vars.vault_ids.clone(),
            password_files: vars.vault_password_files.clone(),
        },
        &|name| std::env::var(name).ok(),
    )
    .map_err(|e| Failure::Input(anyhow!("{e}")))?;
    // The build's copy module opens vaulted role files with the same passwords.
    planner::vault::set_process_vault(vault.clone());
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut extra_vars = IndexMap::new();
    for arg in &vars.extra_vars {
        extra_vars.extend(planner::parse_extra_vars_with_vault(arg, &cwd, &vault)?);
    }
    if let Some(url) = &vars.mirror {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Failure::Input(anyhow!(
                "--mirror '{url}' must start with http:// or https://"
            )));
        }
    }
    Ok(PlanOptions {
        vault,
        extra_vars,
        tags: TagFilter {
            only: vars.tags.clone(),
            skip: vars.skip_tags.clone(),
        },
        mirror: vars.mirror.clone(),
        no_lint: vars.no_lint,
    })
}
