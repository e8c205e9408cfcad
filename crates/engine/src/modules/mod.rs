//! The modules: each module the planner's registry runs in the image (`name: target`) has its
//! file here, `name.rs`, with `pub fn run`: the table below and the files' `mod` lines are
//! made from the registry (`planner::for_each_target_module!`), so a module without its file
//! here does not compile. Each reads its typed parameters (from the planner) and acts on the
//! target, reporting `changed` honestly and changing nothing in check mode. The other files
//! are the build-only step (`build_only.rs`, which a recipe variable plans) and what several
//! modules share.

mod api;
mod attrs;
mod build_only;
mod file_at;
mod file_diff;
mod file_links;
mod file_times;
mod hostconf;
mod lineinfile_edit;
mod package_cmd;
mod packages;
mod pathinfo;
mod pip_version;
mod probe;
mod repos;
pub(crate) mod required;
mod symbolic_mode;
mod textdiff;
mod tzif;
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

/// Declares the file of each module the planner runs in the image, and [`TARGET_MODULES`].
macro_rules! target_modules {
    ($($module:ident),*) => {
        $(mod $module;)*

        /// Every module that runs in the rootfs, by its planner spec's name: the registry's
        /// target modules (a role's own module among them), then the internal build-only step,
        /// which a recipe variable plans.
        pub static TARGET_MODULES: &[(&str, RunModule)] = &[
            $((planner::modules::$module::SPEC.name, $module::run),)*
            (planner::build_only::MODULE, build_only::remove),
        ];
    };
}

planner::for_each_target_module!(target_modules);

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

    /// The table holds what the registry says runs in the image: every target spec of
    /// `planner::modules::ALL`, a role's own module and the build-only step, each once.
    #[test]
    fn the_table_holds_the_registry_s_target_modules() {
        let mut planned: Vec<&str> = planner::modules::ALL
            .iter()
            .filter(|spec| spec.runs() == planner::modules::Runs::Target)
            .map(|spec| spec.name)
            .chain([
                planner::modules::role_module::MODULE,
                planner::build_only::MODULE,
            ])
            .collect();
        let mut implemented: Vec<&str> = TARGET_MODULES.iter().map(|(name, _)| *name).collect();
        planned.sort_unstable();
        implemented.sort_unstable();
        assert_eq!(planned, implemented);
    }
}
