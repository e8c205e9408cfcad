//! `get_url`: download through the site mirror (cached and pinned) into the rootfs.

use std::path::PathBuf;

use planner::modules::get_url::GetUrlParams;
use serde_json::Value as Json;
use sha2::Digest;

use super::{attrs, flag, params, ModuleCtx, ModuleError, ModuleResult};
use crate::rootfs::Kind;

fn sha256_of(reader: &mut dyn std::io::Read) -> Result<String, ModuleError> {
    let mut hasher = sha2::Sha256::new();
    std::io::copy(reader, &mut hasher).map_err(|e| ModuleError::new(e.to_string()))?;
    Ok(format!("{:x}", hasher.finalize()))
}

/// The sha256 asked for by `checksum: sha256:<hex>`.
fn expected_sha256(checksum: Option<&str>) -> Result<Option<String>, ModuleError> {
    let Some(checksum) = checksum else {
        return Ok(None);
    };
    match checksum.split_once(':') {
        Some(("sha256", hex)) if hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit()) => {
            Ok(Some(hex.to_ascii_lowercase()))
        }
        Some(("sha256", url)) if url.contains("://") => Err(ModuleError::new(
            "checksum from a URL is not supported; pin the sha256 itself",
        )),
        _ => Err(ModuleError::new(format!(
            "checksum '{checksum}' must be sha256:<64 hex digits>"
        ))),
    }
}

/// `get_url`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: GetUrlParams = params("get_url", args)?;
    let url = p.url.as_str();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(ModuleError::new(format!(
            "url '{url}': image builds download over http(s) only"
        )));
    }
    let fs = ctx.target.fs();
    let mut dest = PathBuf::from(p.dest.as_str());
    if fs.meta_follow(&dest)?.is_some_and(|m| m.kind == Kind::Dir) {
        let name = url
            .rsplit('/')
            .next()
            .filter(|n| !n.is_empty())
            .unwrap_or("download");
        dest = dest.join(name.split('?').next().unwrap_or(name));
    }
    let expected = expected_sha256(p.checksum.as_ref().map(|c| c.as_str()))?;
    let existing = fs.meta_follow(&dest)?.is_some();
    if existing && !flag(&p.force, false) {
        let matches = match &expected {
            Some(hex) => sha256_of(&mut fs.open_read(&dest)?)? == *hex,
            None => true,
        };
        if matches {
            let changed = attrs::apply(fs, &dest, &p.owner, &p.group, &p.mode, ctx.check)?;
            return Ok(ModuleResult::changed(changed)
                .with("dest", dest.display().to_string())
                .with("url", url)
                .with("msg", "file already exists"));
        }
    }
    if ctx.check {
        return Ok(ModuleResult::changed(true)
            .with("dest", dest.display().to_string())
            .with("url", url));
    }
    let cached = ctx
        .downloads
        .fetch(url, expected.as_deref())
        .map_err(ModuleError::new)?;
    let sha =
        sha256_of(&mut std::fs::File::open(&cached).map_err(|e| ModuleError::new(e.to_string()))?)?;
    let same = existing && sha256_of(&mut fs.open_read(&dest)?)? == sha;
    if !same {
        let mode = match &p.mode {
            Some(planner::modules::types::Mode::Octal(bits)) => Some(*bits),
            _ => None,
        };
        fs.copy_in(&cached, &dest, mode)?;
    }
    let attrs_changed = attrs::apply(fs, &dest, &p.owner, &p.group, &p.mode, false)?;
    Ok(ModuleResult::changed(!same || attrs_changed)
        .with("dest", dest.display().to_string())
        .with("url", url)
        .with("checksum_dest", sha))
}
