//! The modules, one file each: each reads its typed parameters (from the planner) and acts on
//! the target, reporting `changed` honestly and changing nothing in check mode.

mod alternatives;
mod api;
mod apt_repository;
mod assemble;
mod attrs;
mod blockinfile;
mod build_only;
mod command;
mod copy;
mod debconf;
mod file;
mod file_at;
mod file_diff;
mod file_links;
mod file_times;
mod get_url;
mod getent;
mod hostconf;
mod inspect;
mod known_hosts;
mod lineinfile;
mod lineinfile_edit;
mod package_cmd;
mod package_facts;
mod packages;
mod pam_limits;
mod pathinfo;
mod pip;
mod pip_version;
mod probe;
mod repos;
pub(crate) mod required;
mod role_module;
mod script;
mod selinux;
mod stat;
mod symbolic_mode;
mod synchronize;
mod systemd;
mod template;
mod textdiff;
mod textedit;
mod tzif;
mod unarchive;
mod uri;
mod users;

use serde_json::Value as Json;

pub use api::{flag, params, DownloadError, Downloader, ModuleCtx, ModuleError, ModuleResult};
pub use textdiff::unified;

/// Runs a target-side module; `None` when `module` is not one (controller modules).
pub fn run(
    module: &str,
    args: &Json,
    ctx: &ModuleCtx,
) -> Option<Result<ModuleResult, ModuleError>> {
    let outcome = dispatch(module, args, ctx)?;
    if module == planner::modules::role_module::MODULE {
        // A role's own module answers for itself, as under Ansible.
        return Some(outcome);
    }
    let fs = ctx.target.fs();
    Some(match outcome {
        Ok(mut result) => pathinfo::add_path_info(fs, &mut result.fields).map(|()| result),
        // Ansible's failures carry the path's facts too, where they can be read: the
        // failure itself is what the task reports.
        Err(mut error) => {
            let _ = pathinfo::add_path_info(fs, &mut error.fields);
            Err(error)
        }
    })
}

/// A target-side module's implementation.
type RunModule = fn(&Json, &ModuleCtx) -> Result<ModuleResult, ModuleError>;

/// Every module that runs in the rootfs, by the name the planner's table gives it; the
/// internal build-only step and a role's own module are the ones not in that table (a recipe
/// variable plans the first, a role's `library/` the second).
pub const TARGET_MODULES: &[(&str, RunModule)] = &[
    ("shell", command::shell),
    ("command", command::command),
    ("script", script::run),
    ("copy", copy::run),
    ("template", template::run),
    ("file", file::run),
    ("lineinfile", lineinfile::run),
    ("blockinfile", blockinfile::run),
    ("stat", stat::run),
    ("synchronize", synchronize::run),
    ("get_url", get_url::run),
    ("unarchive", unarchive::run),
    ("uri", uri::run),
    ("pip", pip::run),
    ("selinux", selinux::run),
    ("package", packages::package),
    ("apt", packages::apt),
    ("dnf", packages::dnf),
    ("systemd", systemd::systemd),
    ("service", systemd::service),
    ("user", users::user),
    ("group", users::group),
    ("sysctl", hostconf::sysctl),
    ("modprobe", hostconf::modprobe),
    ("kernel_blacklist", hostconf::kernel_blacklist),
    ("pam_limits", pam_limits::pam_limits),
    ("timezone", hostconf::timezone),
    ("mount", hostconf::mount),
    ("ini_file", textedit::ini_file),
    ("replace", textedit::replace),
    ("patch", textedit::patch),
    ("find", inspect::find),
    ("slurp", inspect::slurp),
    ("getent", getent::run),
    ("debconf", debconf::run),
    ("assemble", assemble::run),
    ("known_hosts", known_hosts::run),
    ("tempfile", inspect::tempfile),
    ("service_facts", inspect::service_facts),
    ("package_facts", package_facts::run),
    ("yum_repository", repos::yum_repository),
    ("rpm_key", repos::rpm_key),
    ("apt_key", repos::apt_key),
    ("apt_repository", apt_repository::apt_repository),
    ("deb822_repository", repos::deb822_repository),
    ("alternatives", alternatives::run),
    (planner::build_only::MODULE, build_only::remove),
    (planner::modules::role_module::MODULE, role_module::run),
];

fn dispatch(
    module: &str,
    args: &Json,
    ctx: &ModuleCtx,
) -> Option<Result<ModuleResult, ModuleError>> {
    let (_, run) = TARGET_MODULES.iter().find(|(name, _)| *name == module)?;
    Some(run(args, ctx))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The planner's table of modules and this one are two lists: every module the planner
    /// lets a task use in the rootfs has an implementation here, and every implementation here
    /// is a module the planner plans (or the build-only step, which a recipe variable plans).
    #[test]
    fn the_planner_and_the_engine_know_the_same_target_modules() {
        let planned: Vec<&str> = planner::modules::ALL
            .iter()
            .filter(|spec| spec.runs == planner::modules::Runs::Target)
            .map(|spec| spec.name)
            .collect();
        let implemented: Vec<&str> = TARGET_MODULES.iter().map(|(name, _)| *name).collect();
        let missing: Vec<&&str> = planned
            .iter()
            .filter(|name| !implemented.contains(name))
            .collect();
        assert!(
            missing.is_empty(),
            "planned but not implemented: {missing:?}"
        );
        let unplanned: Vec<&&str> = implemented
            .iter()
            .filter(|name| {
                !planned.contains(name)
                    && **name != planner::build_only::MODULE
                    && **name != planner::modules::role_module::MODULE
            })
            .collect();
        assert!(
            unplanned.is_empty(),
            "implemented but no task can use them: {unplanned:?}"
        );
        let mut names = implemented.clone();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), implemented.len(), "a module listed twice");
    }
}
