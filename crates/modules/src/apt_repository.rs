//! `apt_repository`: a one-line source in the image's `/etc/apt/sources.list.d/`.
//!
//! One-line apt sources as Ansible's apt_repository keeps them. A source that
//! any file of `/etc/apt/sources.list` and `sources.list.d/*.list` already has is left alone;
//! a new one is appended to its file (`filename`, or a name made from its URL); removing takes
//! it out of every file and deletes a file left with no source.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::repos::put_with_mode;
use super::spec::{Downloads, FreeForm, ModuleSpec, PackageFamily, Params, PlanTime};
use super::types::{Choice, Flag, Mode, Text};
use crate::target::Cmd;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};

crate::choices!(
    /// There or not.
    AptRepoState { Present => "present", Absent => "absent" }
);

/// Parameters of `apt_repository`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AptRepositoryParams {
    /// The source line (`deb [signed-by=...] http://mirror/ubuntu jammy main`).
    pub repo: Text,
    /// The file name without `.list` (default: made from the line).
    pub filename: Option<Text>,
    /// Present or absent.
    pub state: Option<Choice<AptRepoState>>,
    /// Run `apt-get update` after a change (default true).
    #[serde(alias = "update-cache")]
    pub update_cache: Option<Flag>,
    /// Mode.
    pub mode: Option<Mode>,
    /// Accepted.
    pub codename: Option<Text>,
    /// Accepted.
    pub validate_certs: Option<Flag>,
    /// Accepted.
    pub install_python_apt: Option<Flag>,
}

impl Params for AptRepositoryParams {}

/// `apt_repository`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "apt_repository",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<AptRepositoryParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: Some(PackageFamily::Apt),
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

const SOURCES_D: &str = "/etc/apt/sources.list.d";

/// A source line in a comparable form (`deb [opts] uri suite components...`), or `None` for a
/// comment, a blank line or something that is no source.
fn normalized(line: &str) -> Option<String> {
    let text = line.split('#').next().unwrap_or_default().trim();
    let (kind, rest) = text.split_once(char::is_whitespace)?;
    if kind != "deb" && kind != "deb-src" {
        return None;
    }
    let rest = rest.trim_start();
    let (options, rest) = match rest.strip_prefix('[') {
        Some(inner) => {
            let (opts, after) = inner.split_once(']')?;
            let opts: Vec<&str> = opts.split_whitespace().collect();
            (format!("[{}] ", opts.join(" ")), after)
        }
        None => (String::new(), rest),
    };
    let words: Vec<&str> = rest.split_whitespace().collect();
    // A URI and a suite, and components unless the suite is a path ending in '/'.
    let valid = match words.as_slice() {
        [_, suite] => suite.ends_with('/'),
        [_, _, _, ..] => true,
        _ => false,
    };
    valid.then(|| format!("{kind} {options}{}", words.join(" ")))
}

/// The file a source goes to without `filename`: its URL without scheme, user or options,
/// every run of other characters as one `_` (as Ansible names it).
fn file_name(source: &str) -> String {
    let first = source
        .split_whitespace()
        .filter(|w| *w != "deb" && *w != "deb-src" && !w.starts_with('[') && !w.ends_with(']'))
        .find(|w| !w.contains('=') || w.contains("://"))
        .unwrap_or(source);
    let no_scheme = first.split_once("://").map_or(first, |(_, r)| r);
    let no_user = no_scheme.rsplit_once('@').map_or(no_scheme, |(_, r)| r);
    no_user
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

/// Every sources file and its text.
fn source_files(ctx: &ModuleCtx) -> Result<Vec<(PathBuf, String)>, ModuleError> {
    let fs = ctx.target.fs();
    let mut paths = vec![PathBuf::from("/etc/apt/sources.list")];
    if fs.exists(Path::new(SOURCES_D))? {
        paths.extend(
            fs.list(Path::new(SOURCES_D))?
                .into_iter()
                .filter(|n| n.ends_with(".list"))
                .map(|n| Path::new(SOURCES_D).join(n)),
        );
    }
    let mut files = Vec::new();
    for path in paths {
        if let Some(text) = fs.read_text_opt(&path)? {
            files.push((path, text));
        }
    }
    Ok(files)
}

/// Writes a sources file, or removes it when no source is left in it.
fn write(ctx: &ModuleCtx, path: &Path, text: &str, mode: &Option<Mode>) -> Result<(), ModuleError> {
    let content = (!text.is_empty()).then_some(text);
    put_with_mode(ctx, path, content, mode).map(|_| ())
}

/// `apt_repository`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: AptRepositoryParams = params(SPEC.name, args)?;
    let repo = p.repo.as_str().trim();
    let source = normalized(repo)
        .ok_or_else(|| ModuleError::new(format!("Invalid repository string: {repo}")))?;
    let absent = matches!(p.state, Some(Choice::Known(AptRepoState::Absent)));
    let files = source_files(ctx)?;
    let holds = |text: &str| {
        text.lines()
            .any(|l| normalized(l).as_ref() == Some(&source))
    };
    let mut changed = false;
    if absent {
        for (path, text) in files.iter().filter(|(_, t)| holds(t)) {
            changed = true;
            let kept: String = text
                .split_inclusive('\n')
                .filter(|l| normalized(l).as_ref() != Some(&source))
                .collect();
            let kept = if kept.lines().any(|l| normalized(l).is_some()) {
                kept
            } else {
                String::new()
            };
            write(ctx, path, &kept, &p.mode)?;
        }
    } else if !files.iter().any(|(_, t)| holds(t)) {
        changed = true;
        let name = p
            .filename
            .as_ref()
            .map(|f| f.as_str().to_owned())
            .unwrap_or_else(|| file_name(repo));
        let path = Path::new(SOURCES_D).join(format!("{name}.list"));
        let mut text = files
            .iter()
            .find(|(f, _)| *f == path)
            .map(|(_, t)| t.clone())
            .unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("{source}\n"));
        write(ctx, &path, &text, &p.mode)?;
        if !ctx.check && flag(&p.update_cache, true) {
            let out = ctx.target.run(&Cmd::new(&["apt-get", "update", "-q"]))?;
            if out.rc != 0 {
                return Err(ModuleError::new(format!(
                    "apt-get update failed (rc {}): {}",
                    out.rc,
                    out.stderr.trim()
                )));
            }
        }
    }
    Ok(ModuleResult::changed(changed)
        .with("repo", repo)
        .with("state", if absent { "absent" } else { "present" }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_compare_and_name_as_ansible_does() {
        assert_eq!(
            normalized("deb  [arch=amd64  signed-by=/k.gpg]  http://r.org/apt stable main # x"),
            Some("deb [arch=amd64 signed-by=/k.gpg] http://r.org/apt stable main".into())
        );
        assert_eq!(
            normalized("deb http://r.org/cuda /"),
            Some("deb http://r.org/cuda /".into())
        );
        assert_eq!(normalized("this is not a repository"), None);
        assert_eq!(normalized("deb http://r.org/apt stable"), None);
        assert_eq!(
            file_name("deb [arch=amd64] http://user:pw@mirror.example.org/debian bookworm main"),
            "mirror_example_org_debian"
        );
        assert_eq!(
            file_name("deb [arch=amd64] http://mirror.site/cuda/ubuntu2204 /"),
            "mirror_site_cuda_ubuntu2204"
        );
    }
}
