//! What Ansible adds to every module result that names a `path` or `dest` (its
//! `add_path_info`), owner and group names from the image's passwd and group, and SHA-1
//! checksums as Ansible reports them.

use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value as Json};
use sha1::Digest;

use super::ModuleError;
use crate::rootfs::{Kind, Meta, RootFs};

/// The name of `id` in the image's `/etc/passwd` or `/etc/group`, if it has one.
pub fn name_of(fs: &RootFs, file: &str, id: u32) -> Result<Option<String>, ModuleError> {
    let text = fs.read_text_opt(Path::new(file))?.unwrap_or_default();
    Ok(text.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        (fields.nth(1)?.parse::<u32>().ok()? == id).then(|| name.to_owned())
    }))
}

/// The SHA-1 of a file in the image, as hex (Ansible's `checksum`).
pub fn sha1_of(fs: &RootFs, path: &Path) -> Result<String, ModuleError> {
    let mut file = fs.open_read(path)?;
    let mut hasher = sha1::Sha1::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| ModuleError::new(format!("{}: {e}", path.display())))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(format!("{:x}", hasher.finalize()))
}

/// Ansible's `state` word for what a path is.
fn state_of(meta: &Meta, followed: Option<&Meta>) -> &'static str {
    match meta.kind {
        Kind::Symlink => "link",
        Kind::Dir => "directory",
        _ if followed.is_some_and(|m| m.nlink > 1) => "hard",
        _ => "file",
    }
}

/// Adds `uid`, `gid`, `owner`, `group`, `mode`, `state` and `size` of the result's `path` (or
/// `dest`) when it exists, as Ansible does for every module's result.
pub fn add_path_info(fs: &RootFs, fields: &mut Map<String, Json>) -> Result<(), ModuleError> {
    let Some(path) = fields
        .get("path")
        .or_else(|| fields.get("dest"))
        .and_then(Json::as_str)
        .map(str::to_owned)
    else {
        return Ok(());
    };
    let path = Path::new(&path);
    // Ansible asks os.path.exists, which follows links: a dangling link gets nothing.
    let Some(followed) = fs.meta_follow(path)? else {
        return Ok(());
    };
    let Some(meta) = fs.meta(path)? else {
        return Ok(());
    };
    let owner = name_of(fs, "/etc/passwd", meta.uid)?.unwrap_or_else(|| meta.uid.to_string());
    let group = name_of(fs, "/etc/group", meta.gid)?.unwrap_or_else(|| meta.gid.to_string());
    fields.insert("uid".into(), Json::from(meta.uid));
    fields.insert("gid".into(), Json::from(meta.gid));
    fields.insert("owner".into(), Json::from(owner));
    fields.insert("group".into(), Json::from(group));
    fields.insert("mode".into(), Json::from(format!("0{:03o}", meta.mode)));
    fields.insert("state".into(), Json::from(state_of(&meta, Some(&followed))));
    fields.insert("size".into(), Json::from(meta.size));
    Ok(())
}
