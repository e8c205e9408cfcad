//! `stat`: facts about a path in the rootfs.
//!
//! Facts about a path in the rootfs, with the fields Ansible's stat returns.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::pathinfo::{float_time, md5_of, name_of, sha1_of};
use super::probe;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Text};
use crate::rootfs::{Kind, Meta, RootFs};
use serde_json::{json, Map, Value as Json};
use sha2::Digest;
use std::path::Path;

/// Parameters of `stat`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StatParams {
    /// The path in the rootfs.
    #[serde(alias = "dest", alias = "name")]
    pub path: Text,
    /// Follow symlinks.
    pub follow: Option<Flag>,
    /// Also report the MD5 (`md5`).
    pub get_md5: Option<Flag>,
    /// Compute a checksum.
    pub get_checksum: Option<Flag>,
    /// Checksum algorithm.
    #[serde(alias = "checksum", alias = "checksum_algo")]
    pub checksum_algorithm: Option<Text>,
    /// Detect the MIME type.
    #[serde(alias = "mime", alias = "mime_type", alias = "mime-type")]
    pub get_mime: Option<Flag>,
    /// Read extended attributes.
    #[serde(alias = "attr", alias = "attributes")]
    pub get_attributes: Option<Flag>,
}

impl Params for StatParams {}

/// `stat`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "stat",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<StatParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// The permission bits Ansible names one by one.
const PERMISSIONS: &[(&str, u32)] = &[
    ("rusr", 0o400),
    ("wusr", 0o200),
    ("xusr", 0o100),
    ("rgrp", 0o040),
    ("wgrp", 0o020),
    ("xgrp", 0o010),
    ("roth", 0o004),
    ("woth", 0o002),
    ("xoth", 0o001),
    ("isuid", 0o4000),
    ("isgid", 0o2000),
];

fn type_flags(meta: &Meta, stat: &mut Map<String, Json>) {
    stat.insert("isdir".into(), json!(meta.kind == Kind::Dir));
    stat.insert("isreg".into(), json!(meta.kind == Kind::File));
    stat.insert("islnk".into(), json!(meta.kind == Kind::Symlink));
    // S_IFCHR, S_IFBLK, S_IFIFO, S_IFSOCK.
    for (name, format) in [
        ("ischr", 0o020_000),
        ("isblk", 0o060_000),
        ("isfifo", 0o010_000),
        ("issock", 0o140_000),
    ] {
        stat.insert(name.into(), json!(meta.format == format));
    }
    for (name, bit) in PERMISSIONS {
        stat.insert((*name).into(), json!(meta.mode & bit != 0));
    }
}

/// The digest of a file by one of the algorithms Ansible's stat offers (SHA-1 unless named).
fn checksum(fs: &RootFs, path: &Path, algorithm: Option<&str>) -> Result<String, ModuleError> {
    fn hex<D: Digest>(data: &[u8]) -> String
    where
        sha2::digest::Output<D>: std::fmt::LowerHex,
    {
        format!("{:x}", D::digest(data))
    }
    Ok(match algorithm.unwrap_or("sha1") {
        "sha1" => sha1_of(fs, path)?,
        "md5" => md5_of(fs, path)?,
        "sha224" => hex::<sha2::Sha224>(&fs.read(path)?),
        "sha256" => hex::<sha2::Sha256>(&fs.read(path)?),
        "sha384" => hex::<sha2::Sha384>(&fs.read(path)?),
        "sha512" => hex::<sha2::Sha512>(&fs.read(path)?),
        other => {
            return Err(ModuleError::new(format!(
                "value of checksum_algorithm must be one of: md5, sha1, sha224, sha256, sha384, sha512, got: {other}"
            )))
        }
    })
}

/// `stat`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: StatParams = params(SPEC.name, args)?;
    let fs = ctx.target.fs();
    let path = Path::new(p.path.as_str());
    let meta = if flag(&p.follow, false) {
        fs.meta_follow(path)?
    } else {
        fs.meta(path)?
    };
    let Some(meta) = meta else {
        return Ok(ModuleResult::changed(false).with("stat", json!({"exists": false})));
    };
    let mut stat = Map::new();
    stat.insert("exists".into(), json!(true));
    stat.insert("path".into(), json!(p.path.to_string()));
    stat.insert("mode".into(), json!(format!("{:04o}", meta.mode)));
    type_flags(&meta, &mut stat);
    for (key, value) in [
        ("uid", json!(meta.uid)),
        ("gid", json!(meta.gid)),
        ("size", json!(meta.size)),
        ("inode", json!(meta.ino)),
        ("nlink", json!(meta.nlink)),
        ("mtime", json!(float_time(meta.mtime, meta.nsecs[0]))),
        ("atime", json!(float_time(meta.atime, meta.nsecs[1]))),
        ("ctime", json!(float_time(meta.ctime, meta.nsecs[2]))),
        ("dev", json!(meta.dev)),
        ("blocks", json!(meta.blocks)),
        ("block_size", json!(meta.block_size)),
        ("device_type", json!(meta.rdev)),
    ] {
        stat.insert(key.into(), value);
    }
    if let Some(name) = name_of(fs, "/etc/passwd", meta.uid)? {
        stat.insert("pw_name".into(), json!(name));
    }
    if let Some(name) = name_of(fs, "/etc/group", meta.gid)? {
        stat.insert("gr_name".into(), json!(name));
    }
    // What root may do with it (os.access follows links): read and write anything that
    // exists, execute what has an x bit, enter any folder.
    let target = fs.meta_follow(path)?;
    stat.insert("readable".into(), json!(target.is_some()));
    stat.insert("writeable".into(), json!(target.is_some()));
    stat.insert(
        "executable".into(),
        json!(target.is_some_and(|t| t.kind == Kind::Dir || t.mode & 0o111 != 0)),
    );
    if meta.kind == Kind::Symlink {
        let target_text = fs.read_link(path)?;
        let base = path.parent().unwrap_or(Path::new("/"));
        stat.insert(
            "lnk_source".into(),
            json!(fs.resolve(&base.join(&target_text))?.display().to_string()),
        );
        stat.insert("lnk_target".into(), json!(target_text));
    }
    if meta.kind == Kind::File {
        if flag(&p.get_md5, false) {
            stat.insert("md5".into(), json!(md5_of(fs, path)?));
        }
        if flag(&p.get_checksum, true) {
            let algorithm = p.checksum_algorithm.as_ref().map(|a| a.as_str());
            stat.insert("checksum".into(), json!(checksum(fs, path, algorithm)?));
        }
    }
    if flag(&p.get_mime, true) {
        probe::add_mime(ctx.target, p.path.as_str(), &mut stat)?;
    }
    if flag(&p.get_attributes, true) {
        probe::add_attributes(ctx.target, p.path.as_str(), &mut stat)?;
    }
    Ok(ModuleResult::changed(false).with("stat", Json::Object(stat)))
}
