//! `unarchive`: extract tar, tar.gz, tgz, tar.xz or zip into the rootfs.
//!
//! Extract an archive (of the role, the rootfs, or the mirror) into the rootfs.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::attrs;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Int, Mode, Text};
use crate::archive::{extract_tar, tar_reader, Limits};
use crate::rootfs::Kind;
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};

/// Parameters of `unarchive`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UnarchiveParams {
    /// The archive: relative to the role's `files/`, an absolute path in the rootfs, or a URL.
    pub src: Text,
    /// Directory to extract into.
    pub dest: Text,
    /// `src` is already in the rootfs.
    pub remote_src: Option<Flag>,
    /// Old name of `remote_src`, inverted.
    pub copy: Option<Flag>,
    /// Skip when this path exists.
    pub creates: Option<Text>,
    /// Paths to leave out.
    pub exclude: Option<Vec<Text>>,
    /// Only these paths.
    pub include: Option<Vec<Text>>,
    /// Extra options for the extractor.
    pub extra_opts: Option<Vec<Text>>,
    /// Do not replace newer files.
    pub keep_newer: Option<Flag>,
    /// Return the list of extracted files.
    pub list_files: Option<Flag>,
    /// Mode applied to extracted files.
    pub mode: Option<Mode>,
    /// Owner of extracted files.
    pub owner: Option<Text>,
    /// Group of extracted files.
    pub group: Option<Text>,
    /// Verify TLS certificates for a URL `src`.
    pub validate_certs: Option<Flag>,
    /// Read buffer size.
    pub io_buffer_size: Option<Int>,
    /// Decrypt vault files (accepted; vault is refused elsewhere).
    pub decrypt: Option<Flag>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
    /// Extended attributes.
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for UnarchiveParams {}

/// `unarchive`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "unarchive",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["src"],
    normalize: super::spec::normalize_with::<UnarchiveParams>,
    plan_time: PlanTime::PushSource,
    downloads: Downloads::RemoteSource("src"),
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `--strip-components=N` (or `--strip-components N`) from `extra_opts`; other options of tar
/// are refused by name, since imgbuild extracts without tar.
fn strip_components(p: &UnarchiveParams) -> Result<usize, ModuleError> {
    let opts: Vec<String> = p
        .extra_opts
        .iter()
        .flatten()
        .map(|o| o.to_string())
        .collect();
    let mut strip = 0;
    let mut words = opts.iter();
    while let Some(word) = words.next() {
        let value = match word.split_once('=') {
            Some(("--strip-components", n)) => Some(n.to_owned()),
            None if word == "--strip-components" => words.next().cloned(),
            _ => {
                return Err(ModuleError::new(format!(
                    "unarchive extra_opts '{word}' is not supported (only --strip-components)"
                )))
            }
        };
        strip = value
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| ModuleError::new("--strip-components needs a number"))?;
    }
    Ok(strip)
}

/// The name of the handler class Ansible's unarchive reports for an archive of this name.
fn handler_name(src: &str) -> &'static str {
    let name = src.to_ascii_lowercase();
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        "TgzArchive"
    } else if name.ends_with(".tar.xz") || name.ends_with(".txz") {
        "TarXzArchive"
    } else if name.ends_with(".tar.bz2") || name.ends_with(".tbz2") {
        "TarBzipArchive"
    } else if name.ends_with(".tar.zst") {
        "TarZstdArchive"
    } else {
        "TarArchive"
    }
}

/// `unarchive`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: UnarchiveParams = params(SPEC.name, args)?;
    let fs = ctx.target.fs();
    let dest = PathBuf::from(p.dest.as_str());
    if let Some(creates) = &p.creates {
        if fs.exists(Path::new(creates.as_str()))? {
            return Ok(ModuleResult {
                skipped: true,
                msg: Some(format!("skipped, since {creates} exists")),
                ..ModuleResult::default()
            });
        }
    }
    if !fs.meta_follow(&dest)?.is_some_and(|m| m.kind == Kind::Dir) {
        return Err(ModuleError::new(format!(
            "dest {} is not a folder; create it first",
            dest.display()
        )));
    }
    let src = p.src.as_str();
    let remote = flag(&p.remote_src, false) || p.copy.as_ref().is_some_and(|c| !c.or(true));
    let file = if src.starts_with("http://") || src.starts_with("https://") {
        let cached = ctx.downloads.fetch(src, None)?;
        std::fs::File::open(&cached)
            .map_err(|e| ModuleError::new(format!("{}: {e}", cached.display())))?
    } else if remote || src.starts_with('/') {
        ctx.source_fs(Path::new(src), remote)?
            .open_read(Path::new(src))?
    } else {
        let local = ctx.local_path()?;
        std::fs::File::open(&local)
            .map_err(|e| ModuleError::new(format!("{}: {e}", local.display())))?
    };
    if src.to_ascii_lowercase().ends_with(".zip") {
        return Err(ModuleError::new(
            "zip archives are not supported yet; repack the file as .tar.gz",
        ));
    }
    if ctx.check {
        return Ok(ModuleResult {
            changed: true,
            msg: Some(format!("would extract {src} into {}", dest.display())),
            ..ModuleResult::default()
        });
    }
    let reader = tar_reader(src, file).map_err(|e| ModuleError::new(e.to_string()))?;
    let limits = Limits {
        strip_components: strip_components(&p)?,
        ..Limits::default()
    };
    let stats = extract_tar(reader, fs, &dest, limits)
        .map_err(|e| ModuleError::new(format!("{src}: {e}")))?;
    let mut changed = stats.written > 0;
    if p.owner.is_some() || p.group.is_some() || p.mode.is_some() {
        for name in &stats.files {
            changed |= attrs::apply(fs, &dest.join(name), &p.owner, &p.group, &p.mode, false)?;
        }
    }
    let mut result = ModuleResult::changed(changed)
        .with("dest", dest.display().to_string())
        .with("src", src)
        .with("handler", handler_name(src));
    if flag(&p.list_files, false) {
        result = result.with("files", json!(stats.files));
    }
    Ok(result)
}
