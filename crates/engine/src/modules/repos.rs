//! Package repositories and their keys in the image: `apt_key` (a key in
//! `/etc/apt/trusted.gpg.d`) and `deb822_repository` (a `.sources` file); `yum_repository`,
//! `rpm_key` and `apt_repository` have files of their own. Keys given as URLs come through the
//! site mirror and are pinned like every artifact.

use std::path::{Path, PathBuf};

use planner::modules::apt_key::{AptKeyParams, AptKeyState};
use planner::modules::deb822_repository::{Deb822RepositoryParams, Deb822State};
use planner::modules::types::{Choice, TextList};
use serde_json::Value as Json;

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::copy::{place, Placement};

fn list(v: &Option<TextList>, sep: &str) -> Option<String> {
    v.as_ref().map(|l| l.0.join(sep))
}

/// Writes `content` at `path` through `place` (mode 0644), or removes the file.
fn put(ctx: &ModuleCtx, path: &Path, content: Option<&str>) -> Result<ModuleResult, ModuleError> {
    put_with_mode(ctx, path, content, &None)
}

/// [`put`] with the task's `mode` (0644 when it gives none).
pub(super) fn put_with_mode(
    ctx: &ModuleCtx,
    path: &Path,
    content: Option<&str>,
    mode: &Option<planner::modules::types::Mode>,
) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    match content {
        Some(content) => {
            if let Some(parent) = path.parent() {
                if !ctx.check {
                    fs.mkdir_all(parent, 0o755)?;
                }
            }
            let mode = mode
                .clone()
                .or(Some(planner::modules::types::Mode::Octal(0o644)));
            place(
                ctx,
                path,
                &Placement {
                    bytes: content.as_bytes(),
                    mode: &mode,
                    owner: &None,
                    group: &None,
                    force: true,
                    validate: None,
                    backup: false,
                },
            )
        }
        None => {
            let there = fs.exists(path)?;
            if there && !ctx.check {
                fs.remove_all(path)?;
            }
            Ok(ModuleResult::changed(there))
        }
    }
}

/// The key bytes of `source`: a URL through the mirror, or a file of the image.
fn key_bytes(ctx: &ModuleCtx, source: &str) -> Result<Vec<u8>, ModuleError> {
    if source.starts_with("http://") || source.starts_with("https://") {
        let file = ctx.downloads.fetch(source, None)?;
        std::fs::read(&file).map_err(|e| ModuleError::new(format!("{}: {e}", file.display())))
    } else {
        Ok(ctx.target.fs().read(Path::new(source))?)
    }
}

/// `apt_key`: the key as an armored file apt reads from `trusted.gpg.d` (or `keyring`).
pub fn apt_key(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: AptKeyParams = params("apt_key", args)?;
    let stem =
        p.id.as_ref()
            .map(|t| t.as_str().trim().to_owned())
            .or_else(|| {
                p.url.as_ref().and_then(|u| {
                    u.as_str().rsplit('/').next().map(|b| {
                        b.trim_end_matches(".asc")
                            .trim_end_matches(".gpg")
                            .to_owned()
                    })
                })
            })
            .unwrap_or_else(|| "imgbuild".into());
    let path = p
        .keyring
        .as_ref()
        .map(|k| PathBuf::from(k.as_str()))
        .unwrap_or_else(|| PathBuf::from(format!("/etc/apt/trusted.gpg.d/{stem}.asc")));
    if matches!(p.state, Some(Choice::Known(AptKeyState::Absent))) {
        return put(ctx, &path, None);
    }
    let bytes = match (&p.url, &p.data, &p.file) {
        (Some(url), _, _) => key_bytes(ctx, url.as_str())?,
        (_, Some(data), _) => data.as_str().as_bytes().to_vec(),
        (_, _, Some(file)) => ctx.target.fs().read(Path::new(file.as_str()))?,
        _ => return Err(ModuleError::new("apt_key needs url, data or file")),
    };
    put(ctx, &path, Some(&String::from_utf8_lossy(&bytes)))
}

/// A file name for a one-line source, as Ansible makes it from the URL.
/// `deb822_repository`: a `.sources` stanza.
pub fn deb822_repository(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: Deb822RepositoryParams = params("deb822_repository", args)?;
    let name = p.name.as_str().trim();
    let path = PathBuf::from(format!("/etc/apt/sources.list.d/{name}.sources"));
    if matches!(p.state, Some(Choice::Known(Deb822State::Absent))) {
        return put(ctx, &path, None);
    }
    let mut lines = Vec::new();
    let mut field = |k: &str, v: Option<String>| {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            lines.push(format!("{k}: {v}"));
        }
    };
    field("X-Repolib-Name", Some(name.to_owned()));
    field("Types", list(&p.types, " ").or(Some("deb".into())));
    field("URIs", list(&p.uris, " "));
    field("Suites", list(&p.suites, " "));
    field("Components", list(&p.components, " "));
    field("Architectures", list(&p.architectures, " "));
    field(
        "Signed-By",
        p.signed_by.as_ref().map(|t| t.as_str().trim().to_owned()),
    );
    field(
        "Enabled",
        p.enabled.as_ref().map(|f| {
            if f.or(true) {
                "yes".into()
            } else {
                "no".into()
            }
        }),
    );
    field(
        "Trusted",
        p.trusted.as_ref().map(|f| {
            if f.or(false) {
                "yes".into()
            } else {
                "no".into()
            }
        }),
    );
    put(ctx, &path, Some(&(lines.join("\n") + "\n")))
}
