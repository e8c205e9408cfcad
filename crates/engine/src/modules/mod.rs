//! The modules, one file each: each reads its typed parameters (from the planner) and acts on
//! the target, reporting `changed` honestly and changing nothing in check mode.

mod apt_repository;
mod assemble;
mod attrs;
mod blockinfile;
mod build_only;
mod command;
mod copy;
mod debconf;
mod file;
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

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value as Json};

use crate::target::Target;

pub use textdiff::unified;

/// What a module needs besides its arguments.
pub struct ModuleCtx<'a> {
    /// Where it acts.
    pub target: &'a dyn Target,
    /// Report what would change, change nothing.
    pub check: bool,
    /// Report before/after of changed files.
    pub diff: bool,
    /// The project root (for the role files a task reads).
    pub project_root: &'a Path,
    /// The project file the task reads (template, copy or script source), if any.
    pub local_file: Option<&'a str>,
    /// The template's text rendered for this task, if any.
    pub rendered: Option<&'a str>,
    /// Environment of the task.
    pub env: &'a [(String, String)],
    /// `ansible_pkg_mgr` of the image.
    pub pkg_mgr: &'a str,
    /// Downloads through the site mirror.
    pub downloads: &'a dyn Downloader,
    /// The build's controller folder, once a task delegated to `localhost` made it: an
    /// absolute `src` of `copy` or `unarchive` is read there first.
    pub controller: Option<&'a crate::rootfs::RootFs>,
}

impl ModuleCtx<'_> {
    /// Where an absolute `src` is read: the build's controller folder when the file is there
    /// (a task delegated to `localhost` put it there) and the task does not say `remote_src`,
    /// else the target.
    pub fn source_fs(
        &self,
        src: &Path,
        remote_src: bool,
    ) -> Result<&crate::rootfs::RootFs, ModuleError> {
        match self.controller.filter(|_| !remote_src) {
            Some(folder) if folder.exists(src)? => Ok(folder),
            _ => Ok(self.target.fs()),
        }
    }

    /// The project file the task reads, as a host path.
    pub fn local_path(&self) -> Result<PathBuf, ModuleError> {
        self.local_file
            .map(|f| self.project_root.join(f))
            .ok_or_else(|| ModuleError::new("the plan names no project file for this task"))
    }
}

/// Fetches artifacts for `get_url` and `unarchive`, and makes `uri`'s requests.
pub trait Downloader {
    /// Downloads `url` (verified against `sha256` when given) into the cache; returns the file.
    fn fetch(&self, url: &str, sha256: Option<&str>) -> Result<PathBuf, DownloadError>;

    /// Makes one HTTP request for `uri` (nothing cached: every request is made).
    fn request(
        &self,
        request: &mirror::http::HttpRequest,
    ) -> Result<mirror::http::HttpResponse, mirror::http::HttpError> {
        mirror::http::send(request)
    }
}

/// A download that failed: what went wrong, and the HTTP status when the mirror answered one.
#[derive(Debug, Clone, PartialEq)]
pub struct DownloadError {
    /// What went wrong and what to do.
    pub message: String,
    /// The mirror's HTTP status, when it answered with an error status.
    pub status: Option<u16>,
}

impl From<DownloadError> for ModuleError {
    fn from(e: DownloadError) -> Self {
        ModuleError::new(e.message)
    }
}

/// A module's outcome.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModuleResult {
    /// Something changed (or would, in check mode).
    pub changed: bool,
    /// A message for people.
    pub msg: Option<String>,
    /// Further result fields (`rc`, `stdout`, `stat`, ...), as Ansible registers them.
    pub fields: Map<String, Json>,
    /// Before and after text of a changed file, for `--diff`.
    pub diff: Option<(String, String, String)>,
    /// The module did not run (check mode for commands, `creates` satisfied, ...).
    pub skipped: bool,
}

impl ModuleResult {
    /// A result with `changed` set.
    pub fn changed(changed: bool) -> Self {
        Self {
            changed,
            ..Self::default()
        }
    }

    /// Adds a result field.
    pub fn with(mut self, key: &str, value: impl Into<Json>) -> Self {
        self.fields.insert(key.to_owned(), value.into());
        self
    }
}

/// A module failure: the task fails with this message.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleError {
    /// What went wrong and what to do.
    pub msg: String,
    /// Result fields to register even though it failed (`rc`, `stdout`, `stderr`).
    pub fields: Map<String, Json>,
}

impl ModuleError {
    /// A failure with a message.
    pub fn new(msg: impl Into<String>) -> Self {
        Self {
            msg: msg.into(),
            fields: Map::new(),
        }
    }
}

impl From<crate::rootfs::FsError> for ModuleError {
    fn from(e: crate::rootfs::FsError) -> Self {
        ModuleError::new(e.to_string())
    }
}

impl From<crate::become_user::BecomeError> for ModuleError {
    fn from(e: crate::become_user::BecomeError) -> Self {
        ModuleError::new(e.to_string())
    }
}

impl From<crate::target::TargetError> for ModuleError {
    fn from(e: crate::target::TargetError) -> Self {
        ModuleError::new(e.to_string())
    }
}

/// Reads a module's typed parameters from its resolved arguments.
pub fn params<P: DeserializeOwned>(module: &str, args: &Json) -> Result<P, ModuleError> {
    serde_json::from_value(args.clone()).map_err(|e| ModuleError::new(format!("{module}: {e}")))
}

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

/// Optional flag value with a default (deferred values were rendered before modules run).
pub fn flag(value: &Option<planner::modules::types::Flag>, default: bool) -> bool {
    value.as_ref().map(|f| f.or(default)).unwrap_or(default)
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
