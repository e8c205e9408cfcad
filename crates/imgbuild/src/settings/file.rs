//! One site defaults file (`config.toml`): its keys typed, unknown keys refused, every value
//! checked when read, and an error naming the file, the line and what is wrong.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde::Deserialize;
use toml::Spanned;

use super::source::Source;
use crate::warewulf::WarewulfVersion;

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    cache_dir: Option<Spanned<PathBuf>>,
    cache_max: Option<Spanned<String>>,
    cache_from: Option<Spanned<String>>,
    cache_to: Option<Spanned<String>>,
    warewulf: Option<Spanned<String>>,
    #[serde(default)]
    secrets: BTreeMap<String, Spanned<PathBuf>>,
}

/// A site defaults file, read and checked; relative paths are taken from its folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteFile {
    /// Which file it is (system, user, or the one `IMGBUILD_CONFIG` names).
    pub source: Source,
    /// `cache_dir`: the cache folder.
    pub cache_dir: Option<PathBuf>,
    /// `cache_max`: the size the cache is kept under, in bytes.
    pub cache_max: Option<u64>,
    /// `cache_from`: the registry repository layers are looked for in.
    pub cache_from: Option<String>,
    /// `cache_to`: the registry repository layers are written to.
    pub cache_to: Option<String>,
    /// `warewulf`: the Warewulf that imports the images.
    pub warewulf: Option<WarewulfVersion>,
    /// `[secrets]`: a build secret's file or folder by id, with the line naming it.
    pub secrets: BTreeMap<String, (PathBuf, usize)>,
}

/// Checks a registry cache's reference: a repository (`docker://HOST/REPO`), no tag or digest,
/// as the cache tags each layer by its key.
pub fn check_cache_repository(text: &str) -> Result<(), String> {
    let reference = registry::Reference::parse(text).map_err(|e| e.to_string())?;
    if reference.tag.is_some() || reference.digest.is_some() {
        return Err(format!(
            "'{text}' names a tag or digest; name only the repository (docker://HOST/REPO): the cache tags each layer by its key"
        ));
    }
    Ok(())
}

/// The 1-based line of byte `at` of `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.get(..at).unwrap_or(text).matches('\n').count() + 1
}

/// Reads `text`, the contents of the file `source` names.
pub fn parse(source: Source, text: &str) -> Result<SiteFile, String> {
    let path = source.path().unwrap_or(Path::new("")).to_path_buf();
    let at = |span: std::ops::Range<usize>, what: String| {
        format!("{}:{}: {what}", path.display(), line_of(text, span.start))
    };
    let raw: Raw = toml::from_str(text).map_err(|e| {
        let message = e.message().trim_end().to_owned();
        match e.span() {
            Some(span) => at(span, message),
            None => format!("{}: {message}", path.display()),
        }
    })?;
    let folder = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let size = |value: &Spanned<String>| {
        crate::cli::parse_size(value.get_ref())
            .map_err(|e| at(value.span(), format!("cache_max: {e}")))
    };
    let repository = |key: &str, value: &Spanned<String>| {
        check_cache_repository(value.get_ref())
            .map(|()| value.get_ref().clone())
            .map_err(|e| at(value.span(), format!("{key}: {e}")))
    };
    let warewulf = |value: &Spanned<String>| {
        WarewulfVersion::from_str(value.get_ref(), false).map_err(|_| {
            at(
                value.span(),
                format!(
                    "warewulf: '{}' is not a Warewulf imgbuild knows: write \"4.5\", \"4.6\" or \"4.7\"",
                    value.get_ref()
                ),
            )
        })
    };
    let mut secrets = BTreeMap::new();
    for (id, src) in &raw.secrets {
        if !crate::secret::is_known(id) {
            return Err(at(
                src.span(),
                format!(
                    "[secrets] names '{id}', which is not a secret imgbuild knows: {}",
                    crate::secret::known_ids()
                ),
            ));
        }
        if src.get_ref().as_os_str().is_empty() {
            return Err(at(src.span(), format!("[secrets] {id} is empty")));
        }
        let line = line_of(text, src.span().start);
        secrets.insert(id.clone(), (folder.join(src.get_ref()), line));
    }
    Ok(SiteFile {
        cache_dir: raw.cache_dir.map(|d| folder.join(d.into_inner())),
        cache_max: raw.cache_max.as_ref().map(size).transpose()?,
        cache_from: raw
            .cache_from
            .as_ref()
            .map(|v| repository("cache_from", v))
            .transpose()?,
        cache_to: raw
            .cache_to
            .as_ref()
            .map(|v| repository("cache_to", v))
            .transpose()?,
        warewulf: raw.warewulf.as_ref().map(warewulf).transpose()?,
        secrets,
        source,
    })
}

/// Reads the file `source` names: `None` when it does not exist and need not.
pub fn read(source: Source, required: bool) -> Result<Option<SiteFile>, String> {
    let path = source.path().unwrap_or(Path::new("")).to_path_buf();
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(source, &text).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => Ok(None),
        Err(e) => Err(format!("{}: cannot read: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn system(text: &str) -> Result<SiteFile, String> {
        parse(
            Source::System(PathBuf::from("/etc/imgbuild/config.toml")),
            text,
        )
    }

    #[test]
    fn every_key_is_read_and_relative_paths_are_the_files_folders() {
        let file = system(
            "cache_dir = \"cache\"\ncache_max = \"200G\"\ncache_from = \"docker://registry.site/cache\"\n\
             cache_to = \"docker://registry.site/cache\"\nwarewulf = \"4.5\"\n\n[secrets]\n\
             module-signing = \"/run/secrets/mok\"\nimage-signing = \"keys/cosign.key\"\n",
        )
        .expect("a good file");
        assert_eq!(
            file.cache_dir.as_deref(),
            Some(Path::new("/etc/imgbuild/cache"))
        );
        assert_eq!(file.cache_max, Some(200 << 30));
        assert_eq!(
            file.cache_from.as_deref(),
            Some("docker://registry.site/cache")
        );
        assert_eq!(file.warewulf, Some(WarewulfVersion::V4_5));
        assert_eq!(
            file.secrets.get("module-signing"),
            Some(&(PathBuf::from("/run/secrets/mok"), 8))
        );
        assert_eq!(
            file.secrets.get("image-signing"),
            Some(&(PathBuf::from("/etc/imgbuild/keys/cosign.key"), 9))
        );
    }

    #[test]
    fn a_bad_file_names_itself_the_line_and_what_is_wrong() {
        for (text, says) in [
            (
                "cache_max = \"1G\"\ncache_size = \"20G\"\n",
                "/etc/imgbuild/config.toml:2: unknown field `cache_size`",
            ),
            (
                "\n\ncache_max = \"20 parsecs\"\n",
                "/etc/imgbuild/config.toml:3: cache_max: '20 parsecs': unknown unit",
            ),
            (
                "cache_max = 20\n",
                "/etc/imgbuild/config.toml:1: invalid type: integer `20`, expected a string",
            ),
            (
                "warewulf = \"4.4\"\n",
                "/etc/imgbuild/config.toml:1: warewulf: '4.4' is not a Warewulf",
            ),
            (
                "cache_to = \"docker://registry.site/cache:latest\"\n",
                "/etc/imgbuild/config.toml:1: cache_to: 'docker://registry.site/cache:latest' names a tag",
            ),
            (
                "[secrets]\nssh = \"/x\"\n",
                "/etc/imgbuild/config.toml:2: [secrets] names 'ssh'",
            ),
            (
                "cache_dir = \"/x\"\ncache_dir = \"/y\"\n",
                "/etc/imgbuild/config.toml:2:",
            ),
            ("cache_max = \"1G", "/etc/imgbuild/config.toml:1:"),
        ] {
            let e = system(text).expect_err(text);
            assert!(e.starts_with(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_missing_file_is_nothing_unless_it_was_named() {
        let missing = PathBuf::from("/nonexistent/imgbuild/config.toml");
        assert_eq!(read(Source::User(missing.clone()), false), Ok(None));
        let e = read(Source::Named(missing), true).expect_err("named");
        assert!(
            e.starts_with("/nonexistent/imgbuild/config.toml: cannot read"),
            "{e}"
        );
    }
}
