//! `unarchive`: extract tar, tar.gz, tgz, tar.xz or zip into the rootfs.
//!
//! Extract an archive (of the role, the rootfs, or the mirror) into the rootfs: a tar here; a
//! zip, or a tar whose `exclude`, `include` or `extra_opts` beyond `--strip-components` need
//! GNU tar's own reading, with Ansible's own module in the image.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::attrs;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Int, Mode, Text};
use crate::archive::{extract_tar, tar_reader, Limits};
use crate::rootfs::Kind;
use serde_json::{json, Map, Value as Json};
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
    /// Set by the plan, not a task's option: where Ansible's own unarchive module, which
    /// extracts a zip, comes from and its digest (the layer key changes with it).
    pub ansible_code: Option<Json>,
}

impl Params for UnarchiveParams {}

/// `unarchive`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "unarchive",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["src"],
    normalize: super::spec::normalize_with::<UnarchiveParams>,
    plan_time: PlanTime::PushArchive,
    downloads: Downloads::RemoteSource("src"),
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `--strip-components=N` (or `--strip-components N`) from `extra_opts`: the one option
/// imgbuild's own extraction takes (any other sends the archive to Ansible's module).
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

/// Whether Ansible's own unarchive module extracts the archive these arguments name, not
/// imgbuild: a zip; or a tar with `exclude` or `include` (GNU tar's patterns and member names),
/// or with an `extra_opts` word other than `--strip-components`. imgbuild's own extraction
/// takes none of these, and leaving one out would extract what the task excludes.
pub fn extracted_by_ansible(args: &Json) -> bool {
    let src = args.get("src").and_then(Json::as_str).unwrap_or_default();
    let listed = |key: &str| match args.get(key) {
        None | Some(Json::Null) => false,
        Some(Json::Array(items)) => !items.is_empty(),
        Some(Json::String(text)) => !text.is_empty(),
        Some(_) => true,
    };
    let other_opts = match args.get("extra_opts") {
        Some(Json::Array(words)) => words_beyond_strip(words),
        Some(Json::String(word)) => words_beyond_strip(&[Json::from(word.as_str())]),
        _ => false,
    };
    src.to_ascii_lowercase().ends_with(".zip") || listed("exclude") || listed("include") || other_opts
}

/// Whether `extra_opts` holds a word other than `--strip-components` and its number.
fn words_beyond_strip(words: &[Json]) -> bool {
    let mut words = words.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            Some("--strip-components") => {
                words.next();
            }
            Some(w) if w.starts_with("--strip-components=") => {}
            _ => return true,
        }
    }
    false
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

/// `unarchive`: what Ansible's action checks first (`creates`, `dest`), then the archive
/// extracted natively, or, for a zip, by Ansible's own module.
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
    let (file, in_image) = open_source(src, remote, ctx)?;
    if extracted_by_ansible(args) {
        let staged = (!in_image).then_some(file);
        return extract_with_ansible(&p, staged, ctx);
    }
    if ctx.check {
        return Ok(ModuleResult {
            changed: true,
            msg: Some(format!("would extract {src} into {}", dest.display())),
            ..ModuleResult::default()
        });
    }
    // A dest that is a link to a folder is followed, as GNU tar's `-C` follows it.
    let into = fs.resolve(&dest)?;
    let reader = tar_reader(src, file).map_err(|e| ModuleError::new(e.to_string()))?;
    let limits = Limits {
        strip_components: strip_components(&p)?,
        keep_newer: flag(&p.keep_newer, false),
        ..Limits::default()
    };
    let stats = extract_tar(reader, fs, &into, limits)
        .map_err(|e| ModuleError::new(format!("{src}: {e}")))?;
    // Ansible's unarchive compares first (tar --diff) and reports a change when a file differs,
    // even one --keep-newer-files then leaves.
    let mut changed = stats.written > 0 || stats.kept_newer > 0;
    if p.owner.is_some() || p.group.is_some() || p.mode.is_some() {
        for name in &stats.files {
            changed |= attrs::apply(fs, &into.join(name), &p.owner, &p.group, &p.mode, false)?;
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

/// The archive opened where it is: downloaded through the mirror, in the image, in the
/// build's controller folder, or the project's file; and whether it is the image's own file.
fn open_source(
    src: &str,
    remote: bool,
    ctx: &ModuleCtx,
) -> Result<(std::fs::File, bool), ModuleError> {
    if src.starts_with("http://") || src.starts_with("https://") {
        let cached = ctx.downloads.fetch(src, None)?;
        let file = std::fs::File::open(&cached)
            .map_err(|e| ModuleError::new(format!("{}: {e}", cached.display())))?;
        return Ok((file, false));
    }
    if remote || src.starts_with('/') {
        let from = ctx.source_fs(Path::new(src), remote)?;
        let in_image = std::ptr::eq(from, ctx.target.fs());
        return Ok((from.open_read(Path::new(src))?, in_image));
    }
    let local = ctx.local_path()?;
    let file = std::fs::File::open(&local)
        .map_err(|e| ModuleError::new(format!("{}: {e}", local.display())))?;
    Ok((file, false))
}

// A zip archive (imgbuild reads no zip), or a tar whose options only GNU tar reads: Ansible's
// own unarchive module (the machine's ansible-core, `ansible_code`) extracts it in the image,
// with the image's tar or unzip, and with what Ansible's action gives it:
// the task's arguments less `decrypt`, and an archive that is not the image's own file copied
// into the image first, its `src` naming the copy. The module then needs the image's `unzip`
// and `zipinfo` (or GNU tar), and fails as under Ansible where they are missing.

/// Extracts the archive `p` names with Ansible's module; `staged` is the archive to copy into
/// the image first (`None` when `src` is the image's own file).
fn extract_with_ansible(
    p: &UnarchiveParams,
    staged: Option<std::fs::File>,
    ctx: &ModuleCtx,
) -> Result<ModuleResult, ModuleError> {
    let module = crate::ansible_code::host()?
        .builtin_module(SPEC.name)
        .ok_or_else(|| {
            ModuleError::new(
                "this archive is extracted by Ansible's unarchive module (a zip, or a tar with exclude, include or tar options), which the ansible-core of this machine lacks",
            )
        })?;
    let mut args = module_args(p)?;
    let fs = ctx.target.fs();
    let folder = PathBuf::from(format!("/tmp/.imgbuild-unarchive-{}", std::process::id()));
    if let Some(mut file) = staged {
        fs.remove_all(&folder)?;
        fs.mkdir_all(&folder, 0o700)?;
        let source = folder.join("source");
        fs.write_from(&source, &mut file, Some(0o600))?;
        args.insert("src".into(), Json::from(source.display().to_string()));
        args.insert("remote_src".into(), Json::Bool(false));
    }
    let file = module.path.display().to_string();
    let with_module = ModuleCtx {
        local_file: Some(&file),
        ..*ctx
    };
    let wrapped = crate::role_module::wrap(SPEC.name, args);
    let result = crate::role_module::run(&Json::Object(wrapped), &with_module);
    fs.remove_all(&folder)?;
    result
}

/// The arguments Ansible's action hands its module: the task's, `copy` turned into
/// `remote_src`, without `decrypt`.
fn module_args(p: &UnarchiveParams) -> Result<Map<String, Json>, ModuleError> {
    let Json::Object(mut args) =
        serde_json::to_value(p).map_err(|e| ModuleError::new(format!("{}: {e}", SPEC.name)))?
    else {
        return Err(ModuleError::new("unarchive's arguments are not a mapping"));
    };
    args.remove("decrypt");
    args.remove("ansible_code");
    if let Some(copy) = args.remove("copy") {
        let copy = match copy {
            Json::Bool(copy) => copy,
            Json::String(text) => crate::types::parse_bool(&text).unwrap_or(true),
            _ => true,
        };
        args.insert("remote_src".into(), Json::Bool(!copy));
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zips_and_tars_with_gnu_tars_options_go_to_ansibles_module() {
        let by_ansible = |args: Json| extracted_by_ansible(&args);
        assert!(by_ansible(json!({"src": "a.ZIP", "dest": "/opt"})));
        assert!(!by_ansible(json!({"src": "a.tar.gz", "dest": "/opt"})));
        assert!(!by_ansible(
            json!({"src": "a.tgz", "exclude": [], "extra_opts": ["--strip-components", "1"]})
        ));
        assert!(!by_ansible(
            json!({"src": "a.tgz", "extra_opts": ["--strip-components=2"]})
        ));
        assert!(by_ansible(json!({"src": "a.tgz", "exclude": ["doc/*"]})));
        assert!(by_ansible(json!({"src": "a.tar", "include": "bin/tool"})));
        assert!(by_ansible(
            json!({"src": "a.tar", "extra_opts": ["--strip-components=1", "--no-same-owner"]})
        ));
    }

    #[test]
    fn the_module_gets_the_actions_arguments() {
        let p: UnarchiveParams = serde_json::from_value(json!({
            "src": "/srv/a.zip", "dest": "/opt", "copy": false, "decrypt": true, "list_files": true
        }))
        .expect("params");
        let args = module_args(&p).expect("args");
        assert_eq!(args.get("remote_src"), Some(&json!(true)));
        assert!(args.get("decrypt").is_none() && args.get("copy").is_none());
        assert_eq!(args.get("list_files"), Some(&json!(true)));
    }
}
