//! `package`: packages through the image's own package manager (`ansible_pkg_mgr`).

use planner::modules::apt::AptState;
use planner::modules::package::{PackageParams, PackageState};
use planner::modules::spec::PackageFamily;
use planner::modules::types::Choice;
use serde_json::Value as Json;

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::packages::{AptRequest, apt_run};

/// `package`: the image's own package manager (`ansible_pkg_mgr`).
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: PackageParams = params(planner::modules::package::SPEC.name, args)?;
    let state = match p.state {
        Some(Choice::Known(s)) => s,
        Some(Choice::Deferred(t)) => {
            return Err(ModuleError::new(format!("state '{t}' was not resolved")))
        }
        None => PackageState::Present,
    };
    // `use: auto`, Ansible's default, is the image's own manager.
    let manager = p
        .use_
        .as_ref()
        .map(|u| u.to_string())
        .filter(|u| u != "auto")
        .unwrap_or_else(|| ctx.pkg_mgr.to_owned());
    match PackageFamily::of_pkg_mgr(&manager) {
        Some(PackageFamily::Apt) => apt_run(
            ctx,
            AptRequest {
                names: p.name.0,
                state: match state {
                    PackageState::Present => AptState::Present,
                    PackageState::Latest => AptState::Latest,
                    PackageState::Absent => AptState::Absent,
                },
                update_cache: false,
                install_recommends: None,
                purge: false,
                autoremove: false,
                extra: &[],
            },
        ),
        Some(PackageFamily::Dnf) => super::dnf::run_request(
            ctx,
            &super::dnf::Request {
                names: p.name.0,
                state,
                options: vec![
                    super::dnf::LOCAL_GPGCHECK.into(),
                    "--setopt=clean_requirements_on_remove=False".into(),
                ],
                nobest: false,
                autoremove: false,
                update_only: false,
                download_only: false,
            },
        ),
        None => Err(ModuleError::new(format!(
            "package manager '{manager}' is not supported; imgbuild drives apt and dnf"
        ))),
    }
}
