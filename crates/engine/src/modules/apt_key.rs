//! `apt_key`: a key apt trusts, in `/etc/apt/trusted.gpg.d`.

use std::path::{Path, PathBuf};

use planner::modules::apt_key::{AptKeyParams, AptKeyState};
use planner::modules::types::Choice;
use serde_json::Value as Json;

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::repos::put;

/// `apt_key`: the key as an armored file apt reads from `trusted.gpg.d` (or `keyring`).
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: AptKeyParams = params(planner::modules::apt_key::SPEC.name, args)?;
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

/// The key bytes of `source`: a URL through the mirror, or a file of the image.
fn key_bytes(ctx: &ModuleCtx, source: &str) -> Result<Vec<u8>, ModuleError> {
    if source.starts_with("http://") || source.starts_with("https://") {
        let file = ctx.downloads.fetch(source, None)?;
        std::fs::read(&file).map_err(|e| ModuleError::new(format!("{}: {e}", file.display())))
    } else {
        Ok(ctx.target.fs().read(Path::new(source))?)
    }
}
