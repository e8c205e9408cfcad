//! `tempfile`: a new temporary file or folder in the image's `/tmp` (the role's scratch space,
//! not part of the layer), registered as `path`.
//!
//! A scratch file or folder in the role's `/tmp`.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Text};
use crate::rootfs::Kind;
use serde_json::Value as Json;
use std::path::PathBuf;

crate::choices!(
    /// File or folder.
    TempKind { File => "file", Directory => "directory" }
);

/// Parameters of `tempfile`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TempfileParams {
    /// File or folder (default file).
    pub state: Option<Choice<TempKind>>,
    /// Where (default `/tmp`).
    pub path: Option<Text>,
    /// Name prefix (default `ansible.`).
    pub prefix: Option<Text>,
    /// Name suffix.
    pub suffix: Option<Text>,
}

impl Params for TempfileParams {}

/// `tempfile`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "tempfile",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<TempfileParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `tempfile`: a new name each call (the role's `/tmp` is not part of the layer).
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: TempfileParams = params(SPEC.name, args)?;
    let dir = PathBuf::from(p.path.as_ref().map_or("/tmp", |t| t.as_str()));
    let prefix = p.prefix.as_ref().map_or("ansible.", |t| t.as_str());
    let suffix = p.suffix.as_ref().map_or("", |t| t.as_str());
    let fs = ctx.target.fs();
    // Python's mkstemp and mkdtemp make the name only, in a folder that must be there.
    if !fs.meta_follow(&dir)?.is_some_and(|m| m.kind == Kind::Dir) {
        return Err(ModuleError::new(format!(
            "[Errno 2] No such file or directory: '{}'",
            dir.display()
        )));
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut n = stamp;
    let path = loop {
        let candidate = dir.join(format!("{prefix}{n:08x}{suffix}"));
        if !fs.exists(&candidate)? {
            break candidate;
        }
        n = n.wrapping_add(1);
    };
    if !ctx.check {
        match &p.state {
            Some(Choice::Known(TempKind::Directory)) => {
                fs.mkdir_all(&path, 0o700)?;
            }
            _ => fs.write_atomic(&path, b"", Some(0o600))?,
        }
    }
    Ok(ModuleResult::changed(true).with("path", path.display().to_string()))
}
