//! What Ansible adds to every module result that names a `path` or `dest` (its
//! `add_path_info`), owner and group names from the image's passwd and group, and SHA-1
//! checksums as Ansible reports them.

use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value as Json};
use sha1::Digest;

use super::api::ModuleError;
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

/// Seconds and nanoseconds as the float Python's `os.stat` gives (`st_mtime`).
pub fn float_time(secs: i64, nsecs: i64) -> f64 {
    secs as f64 + nsecs as f64 / 1e9
}

/// The SHA-1 of a file in the image, as hex (Ansible's `checksum`).
pub fn sha1_of(fs: &RootFs, path: &Path) -> Result<String, ModuleError> {
    digest_of::<sha1::Sha1>(fs, path)
}

/// The MD5 of a file in the image, as hex (Ansible's `md5sum`).
pub fn md5_of(fs: &RootFs, path: &Path) -> Result<String, ModuleError> {
    digest_of::<md5::Md5>(fs, path)
}

/// The SHA-1 of a file outside the image (a download in the cache), as hex.
pub fn sha1_of_host(path: &Path) -> Result<String, ModuleError> {
    let mut file = std::fs::File::open(path)
        .map_err(|e| ModuleError::new(format!("{}: {e}", path.display())))?;
    digest_of_reader::<sha1::Sha1>(&mut file, path)
}

fn digest_of<D: Digest>(fs: &RootFs, path: &Path) -> Result<String, ModuleError>
where
    sha1::digest::Output<D>: std::fmt::LowerHex,
{
    digest_of_reader::<D>(&mut fs.open_read(path)?, path)
}

fn digest_of_reader<D: Digest>(file: &mut dyn Read, path: &Path) -> Result<String, ModuleError>
where
    sha1::digest::Output<D>: std::fmt::LowerHex,
{
    let mut hasher = D::new();
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

/// Copies `path` aside before a module changes it, as Ansible's `backup: yes` does:
/// `<path>.<pid>.<YYYY-MM-DD@HH:MM:SS>~` (UTC), with the file's mode and owner. Returns the name.
pub fn backup(fs: &RootFs, path: &Path) -> Result<String, ModuleError> {
    let meta = fs
        .meta_follow(path)?
        .ok_or_else(|| ModuleError::new(format!("{}: nothing to back up", path.display())))?;
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let name = format!(
        "{}.{}.{}~",
        path.display(),
        std::process::id(),
        utc_timestamp(seconds)
    );
    let copy = Path::new(&name);
    fs.write_atomic(copy, &fs.read(path)?, Some(meta.mode))?;
    fs.chown(copy, Some(meta.uid), Some(meta.gid))?;
    Ok(name)
}

/// `YYYY-MM-DD@HH:MM:SS` of a Unix time, in UTC.
fn utc_timestamp(seconds: u64) -> String {
    let t = crate::utc::Utc::from_epoch(seconds);
    format!(
        "{:04}-{:02}-{:02}@{:02}:{:02}:{:02}",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

#[cfg(test)]
mod tests {
    use super::utc_timestamp;

    #[test]
    fn backup_names_carry_the_utc_time() {
        assert_eq!(utc_timestamp(0), "1970-01-01@00:00:00");
        assert_eq!(utc_timestamp(1_795_000_000), "2026-11-18@11:06:40");
    }
}
