//! imgbuild: builds Warewulf-ready OCI images from Ansible-style recipes and roles.

mod cli;
#[cfg(test)]
mod cli_reference;
mod commands;
mod git;
mod interrupt;
mod progress;
mod render;
mod secret;
mod settings;
mod warewulf;

use std::process::ExitCode;

use clap::Parser;

/// How a command failed, for the exit code.
#[derive(Debug)]
pub enum Failure {
    /// Bad input (usage, recipe, role, template): exit 2.
    Input(anyhow::Error),
    /// A build or a check failed: exit 1.
    Run(anyhow::Error),
}

impl From<planner::PlanError> for Failure {
    fn from(e: planner::PlanError) -> Self {
        Failure::Input(e.into())
    }
}

fn main() -> ExitCode {
    // The build sandbox re-runs this binary with a hidden first argument (see engine::sandbox).
    match std::env::args().nth(1).as_deref() {
        Some(engine::sandbox::HELPER_ARG) => return exit_code(engine::sandbox::helper_main()),
        Some(engine::sandbox::INIT_ARG) => return exit_code(engine::sandbox::init_main()),
        Some(engine::sandbox_enter::ENTER_ARG) => {
            return exit_code(engine::sandbox_enter::enter_main())
        }
        Some(boot::qemu::LAUNCHER_ARG) => return exit_code(boot::qemu::launcher_main()),
        _ => {}
    }
    // An ordinary user's build re-runs imgbuild in a user namespace: this is its first step.
    if let Err(e) = rootless::enter_if_child() {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    interrupt::exit_quietly_on_closed_pipe();
    // QEMU is started through this binary, so that it dies with the boot however it ends.
    boot::qemu::use_launcher();
    let args = cli::Cli::parse();
    interrupt::install();
    // Ansible's temporary files of this run, removed when it ends.
    let _ansible_temp = planner::python::hold_local_temp();
    match commands::run(args) {
        Ok(code) => code,
        Err(Failure::Input(e)) => {
            eprintln!("error: {}", redact(&e));
            ExitCode::from(2)
        }
        Err(Failure::Run(e)) => {
            eprintln!("error: {}", redact(&e));
            ExitCode::from(1)
        }
    }
}

/// An error as it may be shown: no mirror credentials, no vault secrets.
pub fn redact(e: &anyhow::Error) -> String {
    mirror::redact_credentials(&planner::vault::redact(&format!("{e:#}")))
}

fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
