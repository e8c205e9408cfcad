//! Site defaults, layered where podman and Ansible keep theirs, each over the one before:
//! imgbuild's defaults, `/etc/imgbuild/config.toml`, `$XDG_CONFIG_HOME/imgbuild/config.toml`
//! (`~/.config`), the project's `mirror.toml`, environment variables, options.
//! `IMGBUILD_CONFIG` names one file read in place of the system and user files.

mod file;
mod source;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::anyhow;

pub use file::{check_cache_repository, SiteFile};
pub use source::Source;

use crate::warewulf::WarewulfVersion;
use crate::Failure;

/// The system-wide file.
pub const SYSTEM_FILE: &str = "/etc/imgbuild/config.toml";

/// A setting's value and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting<T> {
    /// The value in force.
    pub value: T,
    /// Where it comes from.
    pub from: Source,
}

/// The settings in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The cache folder.
    pub cache_dir: Setting<PathBuf>,
    /// The size the cache is kept under (`None`: a tenth of its filesystem).
    pub cache_max: Setting<Option<u64>>,
    /// The registry repository layers are looked for in.
    pub cache_from: Setting<Option<String>>,
    /// The registry repository layers are written to.
    pub cache_to: Setting<Option<String>>,
    /// The Warewulf that imports the images.
    pub warewulf: Setting<Option<WarewulfVersion>>,
    /// Build secrets' files or folders by id.
    pub secrets: BTreeMap<String, Setting<PathBuf>>,
}

/// What the command line gives: an option's value, or the variable clap read for it.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// `--cache-max` (`IMGBUILD_CACHE_MAX`).
    pub cache_max: Option<u64>,
    /// `--cache-from` (`IMGBUILD_CACHE_FROM`).
    pub cache_from: Option<String>,
    /// `--cache-to` (`IMGBUILD_CACHE_TO`).
    pub cache_to: Option<String>,
    /// `--warewulf`.
    pub warewulf: Option<WarewulfVersion>,
    /// `--secret`: id and source.
    pub secrets: Vec<(String, PathBuf)>,
}

/// A setting from its layers, lowest first: the last with a value wins.
fn layered<T>(default: T, layers: Vec<(Option<T>, Source)>) -> Setting<T> {
    let mut setting = Setting {
        value: default,
        from: Source::Default,
    };
    for (value, from) in layers {
        if let Some(value) = value {
            setting = Setting { value, from };
        }
    }
    setting
}

/// Each file's value of one key, as layers.
fn of_files<T>(
    files: &[SiteFile],
    get: impl Fn(&SiteFile) -> Option<T>,
) -> Vec<(Option<T>, Source)> {
    files.iter().map(|f| (get(f), f.source.clone())).collect()
}

/// The cache folder: `IMGBUILD_CACHE`, over the files' `cache_dir`, over
/// `$XDG_CACHE_HOME/imgbuild` (`~/.cache/imgbuild`).
fn cache_dir_of(files: &[SiteFile], env: &dyn Fn(&str) -> Option<String>) -> Setting<PathBuf> {
    let default = match (env("XDG_CACHE_HOME"), env("HOME")) {
        (Some(xdg), _) => PathBuf::from(xdg).join("imgbuild"),
        (None, Some(home)) => PathBuf::from(home).join(".cache/imgbuild"),
        (None, None) => PathBuf::from("/root/.cache/imgbuild"),
    };
    let mut layers = of_files(files, |f| f.cache_dir.clone());
    layers.push((
        env("IMGBUILD_CACHE").map(PathBuf::from),
        Source::Env("IMGBUILD_CACHE"),
    ));
    layered(default, layers)
}

/// Resolves every setting: `files` (lowest first), the project's mirror.toml at `project`,
/// the variables `env` gives (empty ones are unset) and the options `flags`.
pub fn resolve(
    files: &[SiteFile],
    project: Option<(&Path, &mirror::MirrorConfig)>,
    env: &dyn Fn(&str) -> Option<String>,
    flags: &Flags,
) -> Result<Settings, String> {
    let env = |name: &str| env(name).filter(|v| !v.is_empty());
    let project_source =
        || Source::Project(project.map(|(p, _)| p.to_path_buf()).unwrap_or_default());
    let mut cache_max = of_files(files, |f| f.cache_max.map(Some));
    let env_max = env("IMGBUILD_CACHE_MAX")
        .map(|text| crate::cli::parse_size(&text).map_err(|e| format!("IMGBUILD_CACHE_MAX: {e}")))
        .transpose()?;
    cache_max.push((env_max.map(Some), Source::Env("IMGBUILD_CACHE_MAX")));
    cache_max.push((flags.cache_max.map(Some), Source::Flag("--cache-max")));
    let registry = |file: fn(&SiteFile) -> Option<String>,
                    project_value: Option<String>,
                    variable: &'static str,
                    flag: (Option<String>, &'static str)| {
        let mut layers = of_files(files, |f| file(f).map(Some));
        layers.push((project_value.map(Some), project_source()));
        layers.push((env(variable).map(Some), Source::Env(variable)));
        layers.push((flag.0.map(Some), Source::Flag(flag.1)));
        layered(None, layers)
    };
    let config = project.map(|(_, c)| c);
    let mut warewulf = of_files(files, |f| f.warewulf.map(Some));
    warewulf.push((flags.warewulf.map(Some), Source::Flag("--warewulf")));
    Ok(Settings {
        cache_dir: cache_dir_of(files, &env),
        cache_max: layered(None, cache_max),
        cache_from: registry(
            |f| f.cache_from.clone(),
            config.and_then(|c| c.cache_from.clone()),
            "IMGBUILD_CACHE_FROM",
            (flags.cache_from.clone(), "--cache-from"),
        ),
        cache_to: registry(
            |f| f.cache_to.clone(),
            config.and_then(|c| c.cache_to.clone()),
            "IMGBUILD_CACHE_TO",
            (flags.cache_to.clone(), "--cache-to"),
        ),
        warewulf: layered(None, warewulf),
        secrets: secrets_of(files, project, flags),
    })
}

/// Build secrets by id: the files', then mirror.toml's (relative to its folder), then `--secret`.
fn secrets_of(
    files: &[SiteFile],
    project: Option<(&Path, &mirror::MirrorConfig)>,
    flags: &Flags,
) -> BTreeMap<String, Setting<PathBuf>> {
    let mut secrets = BTreeMap::new();
    for file in files {
        for (id, (src, _)) in &file.secrets {
            let from = file.source.clone();
            secrets.insert(
                id.clone(),
                Setting {
                    value: src.clone(),
                    from,
                },
            );
        }
    }
    if let Some((path, config)) = project {
        let folder = path.parent().unwrap_or(Path::new("."));
        for (id, src) in &config.secrets {
            let from = Source::Project(path.to_path_buf());
            secrets.insert(
                id.clone(),
                Setting {
                    value: folder.join(src),
                    from,
                },
            );
        }
    }
    for (id, src) in &flags.secrets {
        let from = Source::Flag("--secret");
        secrets.insert(
            id.clone(),
            Setting {
                value: src.clone(),
                from,
            },
        );
    }
    secrets
}

/// The site files to read, each with whether it must exist: the one `IMGBUILD_CONFIG` names,
/// else the system's then the user's.
pub fn site_sources(env: &dyn Fn(&str) -> Option<String>) -> Vec<(Source, bool)> {
    let env = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(named) = env("IMGBUILD_CONFIG") {
        return vec![(Source::Named(PathBuf::from(named)), true)];
    }
    let config_home = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| PathBuf::from(home).join(".config")));
    let mut sources = vec![(Source::System(PathBuf::from(SYSTEM_FILE)), false)];
    if let Some(home) = config_home {
        sources.push((Source::User(home.join("imgbuild/config.toml")), false));
    }
    sources
}

/// The process's environment, as [`resolve`] reads it.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The site files of this run, read once: a bad one is bad input (exit 2).
pub fn site_files() -> Result<&'static [SiteFile], Failure> {
    static FILES: OnceLock<Result<Vec<SiteFile>, String>> = OnceLock::new();
    FILES
        .get_or_init(|| {
            let mut files = Vec::new();
            for (source, required) in site_sources(&process_env) {
                files.extend(file::read(source, required)?);
            }
            Ok(files)
        })
        .as_deref()
        .map_err(|e| Failure::Input(anyhow!("{e}")))
}

/// The settings in force for a command run in the project at `root` (if any) with `flags`.
pub fn in_force(root: Option<&Path>, flags: &Flags) -> Result<Settings, Failure> {
    let files = site_files()?;
    let mirror_toml = root.map(|root| root.join("mirror.toml"));
    let config = mirror_toml
        .as_deref()
        .map(mirror::MirrorConfig::load)
        .transpose()
        .map_err(|e| Failure::Input(anyhow!(e)))?;
    let project = mirror_toml.as_deref().zip(config.as_ref());
    resolve(files, project, &process_env, flags).map_err(|e| Failure::Input(anyhow!(e)))
}

/// The cache folder in force (the site files read, or unread if they are bad: the command has
/// already failed on them).
pub fn cache_dir() -> Setting<PathBuf> {
    cache_dir_of(site_files().unwrap_or_default(), &|name| {
        process_env(name).filter(|v| !v.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(source: Source, text: &str) -> SiteFile {
        file::parse(source, text).expect("a good file")
    }

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    fn site() -> Vec<SiteFile> {
        let system = Source::System(PathBuf::from(SYSTEM_FILE));
        let user = Source::User(PathBuf::from("/home/ana/.config/imgbuild/config.toml"));
        vec![
            file(
                system,
                "cache_dir = \"/var/cache/imgbuild\"\ncache_max = \"100G\"\n\
                 cache_from = \"docker://site/cache\"\nwarewulf = \"4.5\"\n\
                 [secrets]\nmodule-signing = \"/etc/imgbuild/mok\"\n",
            ),
            file(user, "cache_max = \"200G\"\n"),
        ]
    }

    #[test]
    fn each_layer_goes_over_the_one_before() {
        let files = site();
        let project_toml = Path::new("/srv/project/mirror.toml");
        let config: mirror::MirrorConfig = toml::from_str(
            "cache_from = \"docker://project/cache\"\n[secrets]\nmodule-signing = \"mok\"\n",
        )
        .expect("mirror.toml");
        let env = env_of(&[
            ("HOME", "/home/ana"),
            ("IMGBUILD_CACHE_TO", "docker://env/cache"),
        ]);
        let none = Flags::default();
        let settings = resolve(&files, Some((project_toml, &config)), &env, &none).expect("ok");
        assert_eq!(settings.cache_dir.value, Path::new("/var/cache/imgbuild"));
        assert_eq!(settings.cache_dir.from, files[0].source);
        assert_eq!(settings.cache_max.value, Some(200 << 30));
        assert_eq!(settings.cache_max.from, files[1].source);
        assert_eq!(
            settings.cache_from.value.as_deref(),
            Some("docker://project/cache")
        );
        assert_eq!(
            settings.cache_from.from,
            Source::Project(project_toml.into())
        );
        assert_eq!(
            settings.cache_to.value.as_deref(),
            Some("docker://env/cache")
        );
        assert_eq!(settings.cache_to.from, Source::Env("IMGBUILD_CACHE_TO"));
        assert_eq!(settings.warewulf.value, Some(WarewulfVersion::V4_5));
        let mok = &settings.secrets["module-signing"];
        assert_eq!(mok.value, Path::new("/srv/project/mok"));
        // Without the project, the system file's secret and cache are in force.
        let settings = resolve(&files, None, &env, &none).expect("ok");
        assert_eq!(
            settings.cache_from.value.as_deref(),
            Some("docker://site/cache")
        );
        assert_eq!(settings.secrets["module-signing"].from, files[0].source);
        // Options go over everything.
        let flags = Flags {
            cache_max: Some(1 << 30),
            cache_from: Some("docker://flag/cache".into()),
            warewulf: Some(WarewulfVersion::V4_7),
            secrets: vec![("module-signing".into(), PathBuf::from("/tmp/mok"))],
            ..Flags::default()
        };
        let settings = resolve(&files, Some((project_toml, &config)), &env, &flags).expect("ok");
        assert_eq!(settings.cache_max.value, Some(1 << 30));
        assert_eq!(settings.cache_max.from, Source::Flag("--cache-max"));
        assert_eq!(settings.cache_from.from, Source::Flag("--cache-from"));
        assert_eq!(settings.warewulf.value, Some(WarewulfVersion::V4_7));
        assert_eq!(
            settings.secrets["module-signing"].value,
            Path::new("/tmp/mok")
        );
    }

    #[test]
    fn the_defaults_and_the_environment_without_files() {
        let none = Flags::default();
        let settings = resolve(&[], None, &env_of(&[("HOME", "/home/ana")]), &none).expect("ok");
        assert_eq!(
            settings.cache_dir.value,
            Path::new("/home/ana/.cache/imgbuild")
        );
        assert_eq!(settings.cache_dir.from, Source::Default);
        assert_eq!(settings.cache_max.value, None);
        assert_eq!(settings.warewulf.value, None);
        let env = env_of(&[
            ("XDG_CACHE_HOME", "/scratch"),
            ("IMGBUILD_CACHE_FROM", ""),
            ("IMGBUILD_CACHE_MAX", "50G"),
        ]);
        let settings = resolve(&[], None, &env, &none).expect("ok");
        assert_eq!(settings.cache_dir.value, Path::new("/scratch/imgbuild"));
        assert_eq!(settings.cache_max.value, Some(50 << 30));
        assert_eq!(settings.cache_max.from, Source::Env("IMGBUILD_CACHE_MAX"));
        // An empty variable is unset.
        assert_eq!(settings.cache_from.value, None);
        let env = env_of(&[("IMGBUILD_CACHE", "/fast/cache")]);
        let settings = resolve(&site(), None, &env, &none).expect("ok");
        assert_eq!(settings.cache_dir.value, Path::new("/fast/cache"));
        assert_eq!(settings.cache_dir.from, Source::Env("IMGBUILD_CACHE"));
        let bad = env_of(&[("IMGBUILD_CACHE_MAX", "lots")]);
        let e = resolve(&[], None, &bad, &none).expect_err("a bad size");
        assert!(
            e.starts_with("IMGBUILD_CACHE_MAX: 'lots' is not a size"),
            "{e}"
        );
    }

    #[test]
    fn imgbuild_config_replaces_the_system_and_user_files() {
        let sources = site_sources(&env_of(&[("HOME", "/home/ana")]));
        assert_eq!(
            sources,
            vec![
                (Source::System(PathBuf::from(SYSTEM_FILE)), false),
                (
                    Source::User(PathBuf::from("/home/ana/.config/imgbuild/config.toml")),
                    false
                ),
            ]
        );
        let xdg = site_sources(&env_of(&[
            ("HOME", "/home/ana"),
            ("XDG_CONFIG_HOME", "/cfg"),
        ]));
        assert_eq!(
            xdg[1].0,
            Source::User(PathBuf::from("/cfg/imgbuild/config.toml"))
        );
        let named = site_sources(&env_of(&[("IMGBUILD_CONFIG", "/tmp/site.toml")]));
        assert_eq!(
            named,
            vec![(Source::Named(PathBuf::from("/tmp/site.toml")), true)]
        );
    }
}
