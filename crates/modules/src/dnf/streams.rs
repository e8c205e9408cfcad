//! `@` specs as ansible-core 2.14's `dnf` module reads them: a module stream
//! (`@name[:stream][/profile]`) when a repository has a module of that name, else a group, else
//! an environment group; neither is `No group <spec> available.` A stream that was not enabled
//! yet adds `Module <spec> installed.` to the results, one that was adds `Module <spec>
//! removed.` when it goes, and a removed stream is reset, as the module resets it.

use serde_json::json;

use crate::api::{ModuleCtx, ModuleError};
use crate::package_cmd::run;

/// What the `@` specs of a task name.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct AtSpecs {
    /// Module specs, without the `@`.
    pub modules: Vec<String>,
    /// Group ids.
    pub groups: Vec<String>,
    /// Environment group ids.
    pub environments: Vec<String>,
}

impl AtSpecs {
    /// The specs dnf's command line takes for them (`@id`; an environment's too, for dnf 4's
    /// `install` finds no `@^id`).
    pub fn args(&self) -> Vec<String> {
        let ids = self.groups.iter().chain(&self.environments);
        let modules = self.modules.iter();
        ids.chain(modules).map(|spec| format!("@{spec}")).collect()
    }
}

/// What `dnf group info` says a name is.
enum Comps {
    Group(String),
    Environment(String),
}

/// The module's name in a module spec: before any `:` (stream) or `/` (profile).
fn module_name(spec: &str) -> &str {
    spec.split([':', '/']).next().unwrap_or(spec).trim()
}

/// The stream a module spec names, if it names one.
fn stream_of(spec: &str) -> Option<&str> {
    let without_profile = spec.split('/').next().unwrap_or(spec);
    without_profile.split(':').nth(1).filter(|s| !s.is_empty())
}

/// The rows `dnf module list` prints for module `name` (`--enabled`: its enabled streams):
/// each row's stream, without its `[e]`-style marks.
fn module_rows(
    ctx: &ModuleCtx,
    options: &[String],
    name: &str,
    enabled: bool,
) -> Result<Vec<String>, ModuleError> {
    let mut argv: Vec<String> = vec!["dnf".into(), "-q".into()];
    argv.extend(options.iter().cloned());
    argv.extend(["module".into(), "list".into()]);
    if enabled {
        argv.push("--enabled".into());
    }
    argv.push(name.into());
    let out = run(ctx, argv, &[])?;
    if out.rc != 0 {
        return Ok(Vec::new());
    }
    Ok(out
        .stdout
        .lines()
        .filter_map(|line| {
            let mut columns = line.split_whitespace();
            (columns.next() == Some(name)).then(|| columns.next().unwrap_or_default().to_owned())
        })
        .collect())
}

/// Whether the stream `spec` names (or any stream of its module) is enabled: the module's
/// `_is_module_installed`.
pub(super) fn stream_enabled(
    ctx: &ModuleCtx,
    options: &[String],
    spec: &str,
) -> Result<bool, ModuleError> {
    let streams = module_rows(ctx, options, module_name(spec), true)?;
    Ok(match stream_of(spec) {
        Some(stream) => streams.iter().any(|s| s == stream),
        None => !streams.is_empty(),
    })
}

/// The group or environment `dnf group info` finds for `name`, if it knows one.
fn comps_of(ctx: &ModuleCtx, options: &[String], name: &str) -> Result<Option<Comps>, ModuleError> {
    let mut argv: Vec<String> = vec!["dnf".into(), "-q".into(), "-v".into()];
    argv.extend(options.iter().cloned());
    argv.extend(["group".into(), "info".into(), name.into()]);
    let out = run(ctx, argv, &[])?;
    Ok(out.stdout.lines().find_map(|line| {
        let line = line.trim();
        line.strip_prefix("Group-Id: ")
            .map(|id| Comps::Group(id.trim().to_owned()))
            .or_else(|| {
                line.strip_prefix("Environment-Id: ")
                    .map(|id| Comps::Environment(id.trim().to_owned()))
            })
    }))
}

/// Sorts `@specs` into module streams and groups; one that is neither fails as the module
/// fails.
pub(super) fn classify(
    ctx: &ModuleCtx,
    options: &[String],
    specs: &[String],
) -> Result<AtSpecs, ModuleError> {
    let mut sorted = AtSpecs::default();
    for spec in specs {
        let name = spec.trim_start_matches('@').trim();
        if !module_rows(ctx, options, module_name(name), false)?.is_empty() {
            sorted.modules.push(name.to_owned());
            continue;
        }
        match comps_of(ctx, options, name)? {
            Some(Comps::Group(id)) => sorted.groups.push(id),
            Some(Comps::Environment(id)) => sorted.environments.push(id),
            None => {
                return Err(ModuleError {
                    msg: format!("No group {name} available."),
                    fields: [("results".to_owned(), json!([]))].into_iter().collect(),
                })
            }
        }
    }
    Ok(sorted)
}

/// After a removal: each removed module's stream reset, as the module's remove, disable and
/// reset leave it.
pub(super) fn reset(
    ctx: &ModuleCtx,
    options: &[String],
    modules: &[String],
) -> Result<(), ModuleError> {
    if modules.is_empty() || ctx.check {
        return Ok(());
    }
    let mut argv: Vec<String> = vec!["dnf".into(), "-y".into(), "-q".into()];
    argv.extend(options.iter().cloned());
    argv.extend(["module".into(), "reset".into()]);
    argv.extend(modules.iter().map(|m| module_name(m).to_owned()));
    let out = run(ctx, argv, &[])?;
    if out.rc != 0 {
        return Err(crate::package_cmd::failed("dnf module reset", &out));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_spec_names_its_module_and_stream() {
        assert_eq!(module_name("el-stack:1/common"), "el-stack");
        assert_eq!(module_name("nodejs/development"), "nodejs");
        assert_eq!(stream_of("el-stack:1/common"), Some("1"));
        assert_eq!(stream_of("nodejs:18"), Some("18"));
        assert_eq!(stream_of("nodejs/common"), None);
        assert_eq!(stream_of("nodejs"), None);
    }
}
