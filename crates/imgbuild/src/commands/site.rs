//! What a build takes from the settings in force (`crate::settings`): the registry cache and
//! the build secrets, each checked before any work and named by where it was set.

use std::path::Path;

use anyhow::anyhow;
use planner::Project;

use crate::cli::BuildArgs;
use crate::secret::BuildSecret;
use crate::settings::{Setting, Settings, Source};
use crate::Failure;

/// What the command line gives the settings.
fn flags_of(args: &BuildArgs) -> crate::settings::Flags {
    crate::settings::Flags {
        cache_max: args.cache_max,
        // An empty IMGBUILD_CACHE_FROM (which clap passes on) is unset, as before.
        cache_from: args.cache_from.clone().filter(|r| !r.is_empty()),
        cache_to: args.cache_to.clone().filter(|r| !r.is_empty()),
        warewulf: args.warewulf,
        secrets: (args.secrets.iter())
            .map(|s| (s.id.clone(), s.src.clone()))
            .collect(),
    }
}

/// The settings in force for a build of the project at `root`, and `args` with the site's
/// Warewulf when no `--warewulf` names one.
pub fn settings_for(root: &Path, args: &BuildArgs) -> Result<(Settings, BuildArgs), Failure> {
    let settings = crate::settings::in_force(Some(root), &flags_of(args))?;
    let args = BuildArgs {
        warewulf: settings.warewulf.value,
        ..args.clone()
    };
    Ok((settings, args))
}

/// How an error names where a registry cache setting `key` came from: `--cache-to`,
/// `IMGBUILD_CACHE_TO`, `mirror.toml's cache_to`, or a site file.
fn named(key: &str, from: &Source) -> String {
    match from {
        Source::Flag(flag) => (*flag).to_owned(),
        Source::Env(name) => (*name).to_owned(),
        Source::Project(_) => format!("mirror.toml's {key}"),
        other => format!("{other}: {key}"),
    }
}

/// The repository of a registry cache setting, when one is set; a bad one is bad input.
fn repository(
    key: &str,
    setting: &Setting<Option<String>>,
) -> Result<Option<registry::Reference>, Failure> {
    let Some(text) = &setting.value else {
        return Ok(None);
    };
    let from = named(key, &setting.from);
    let reference =
        registry::Reference::parse(text).map_err(|e| Failure::Input(anyhow!("{from}: {e}")))?;
    crate::settings::check_cache_repository(text)
        .map_err(|e| Failure::Input(anyhow!("{from}: {e}")))?;
    Ok(Some(reference))
}

/// The registry cache: `--cache-from` and `--cache-to` (or `IMGBUILD_CACHE_FROM` and
/// `IMGBUILD_CACHE_TO`), else mirror.toml's `cache_from` and `cache_to`, else the site
/// files'. Each names a repository (the cache tags its layers itself).
pub fn registry_cache(
    settings: &Settings,
) -> Result<std::sync::Arc<image::cache::remote::RemoteCache>, Failure> {
    let from = repository("cache_from", &settings.cache_from)?;
    let to = repository("cache_to", &settings.cache_to)?;
    image::cache::remote::RemoteCache::open(from.as_ref(), to.as_ref())
        .map(std::sync::Arc::new)
        .map_err(|e| Failure::Input(anyhow!(e)))
}

/// The secrets of `--secret`, then mirror.toml's `[secrets]` (`config`), then the site files'
/// `[secrets]`, for ids not given before.
pub fn secrets(
    project: &Project,
    args: &BuildArgs,
    config: &mirror::MirrorConfig,
) -> Result<Vec<BuildSecret>, Failure> {
    let text = std::fs::read_to_string(project.root.join("mirror.toml")).unwrap_or_default();
    let mut secrets =
        crate::secret::with_site_secrets(&args.secrets, config, &text, &project.root)?;
    for file in crate::settings::site_files()?.iter().rev() {
        let path = file.source.path().map(|p| p.display().to_string());
        for (id, (src, line)) in &file.secrets {
            if !secrets.iter().any(|s| &s.id == id) {
                secrets.push(BuildSecret {
                    id: id.clone(),
                    src: src.clone(),
                    origin: Some(format!("{}:{line}", path.as_deref().unwrap_or_default())),
                });
            }
        }
    }
    Ok(secrets)
}
