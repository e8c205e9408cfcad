//! The variables Ansible's `template` action adds for the file it renders (its
//! `generate_ansible_template_vars`): `template_host`, `template_path`, `template_fullpath`,
//! `template_destpath`, `template_uid`, `template_mtime`, `template_run_date` and
//! `ansible_managed`.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value as Json};

use crate::vars::{Layer, VarValue};

/// What Ansible's `ansible_managed` is by default (`DEFAULT_MANAGED_STR`).
const MANAGED: &str = "Ansible managed";

/// The template variables for the file `src` (as the task names it), found at `fullpath` on the
/// machine running the build, written to `dest`; they take precedence over the task's own.
pub fn template_vars(src: &str, fullpath: &Path, dest: Option<&str>) -> Arc<Layer> {
    let meta = std::fs::metadata(fullpath).ok();
    let uid = meta.as_ref().map_or(0, MetadataExt::uid);
    let mtime = meta.as_ref().map_or(0, MetadataExt::mtime);
    let mtime_micros = meta
        .as_ref()
        .map_or(0, |m| u32::try_from(m.mtime_nsec() / 1000).unwrap_or(0));
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let now_secs = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    let fullpath = std::path::absolute(fullpath).unwrap_or_else(|_| fullpath.to_path_buf());
    let values = [
        ("template_host", json!(host_name())),
        ("template_path", json!(src)),
        ("template_fullpath", json!(fullpath.display().to_string())),
        ("template_destpath", dest.map_or(Json::Null, |d| json!(d))),
        ("template_uid", json!(user_name(uid))),
        (
            "template_mtime",
            json!(super::now::local_datetime_text(mtime, mtime_micros)),
        ),
        (
            "template_run_date",
            json!(super::now::local_datetime_text(
                now_secs,
                now.subsec_micros()
            )),
        ),
        ("ansible_managed", json!(MANAGED)),
    ];
    Arc::new(
        values
            .into_iter()
            .map(|(name, value)| (name.to_owned(), VarValue::Known(value)))
            .collect(),
    )
}

/// The machine's host name, as Python's `os.uname()[1]`.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .unwrap_or_default()
}

/// The user name of `uid` on the machine running the build, else the number, as Ansible
/// falls back to it.
fn user_name(uid: u32) -> String {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    passwd
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let id = fields.nth(1)?;
            (id.parse::<u32>().ok()? == uid).then(|| name.to_owned())
        })
        .next()
        .unwrap_or_else(|| uid.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_files_template_vars_say_where_it_came_from() {
        let dir = tempfile::tempdir().expect("a folder");
        let file = dir.path().join("motd.j2");
        std::fs::write(&file, "x").expect("written");
        let vars = template_vars("motd.j2", &file, Some("/etc/motd"));
        let get = |name: &str| match vars.get(name) {
            Some(VarValue::Known(v)) => v.clone(),
            _ => Json::Null,
        };
        assert_eq!(get("template_path"), json!("motd.j2"));
        assert_eq!(get("template_destpath"), json!("/etc/motd"));
        assert_eq!(get("ansible_managed"), json!("Ansible managed"));
        assert_eq!(get("template_fullpath"), json!(file.display().to_string()));
        assert!(get("template_mtime")
            .as_str()
            .is_some_and(|t| t.len() >= 19));
        assert!(!get("template_uid").as_str().unwrap_or_default().is_empty());
    }
}
