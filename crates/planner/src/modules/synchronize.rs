//! `ansible.posix.synchronize`: rsync a file or folder into the image, as Ansible's module
//! does, with rsync run in the image. The source is a file of the role (`files/`), or, with
//! `delegate_to` naming the image itself, a path in the image (rsync there, from path to path).

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Int, Text, TextList};

crate::choices!(
    /// Which side the source is on.
    SyncMode { Push => "push", Pull => "pull" }
);

/// Parameters of `synchronize` (ansible.posix 1.5's, as Debian's ansible ships it).
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SynchronizeParams {
    /// What to copy; a trailing `/` copies a folder's contents, not the folder.
    pub src: Text,
    /// Where in the image.
    pub dest: Text,
    /// `push` (default) or `pull`.
    pub mode: Option<Choice<SyncMode>>,
    /// rsync `--archive` (default yes): recursive, links, perms, times, owner, group.
    pub archive: Option<Flag>,
    /// Compare checksums, not size and time.
    pub checksum: Option<Flag>,
    /// rsync `--compress` (default yes; no effect within one machine).
    pub compress: Option<Flag>,
    /// Update only files that exist at the destination.
    pub existing_only: Option<Flag>,
    /// Delete files at the destination that the source lacks (`--delete-after`).
    pub delete: Option<Flag>,
    /// Copy folders without recursing.
    pub dirs: Option<Flag>,
    /// Recurse (default: as `archive`).
    pub recursive: Option<Flag>,
    /// Copy symlinks as symlinks (default: as `archive`).
    pub links: Option<Flag>,
    /// Copy what symlinks point at.
    pub copy_links: Option<Flag>,
    /// Keep permissions (default: as `archive`).
    pub perms: Option<Flag>,
    /// Keep modification times (default: as `archive`).
    pub times: Option<Flag>,
    /// Keep the owner (default: as `archive`).
    pub owner: Option<Flag>,
    /// Keep the group (default: as `archive`).
    pub group: Option<Flag>,
    /// rsync's `--delay-updates -F` (default yes).
    pub delay_updates: Option<Flag>,
    /// Keep partially copied files.
    pub partial: Option<Flag>,
    /// rsync `--timeout`.
    pub rsync_timeout: Option<Int>,
    /// More rsync options, as given.
    pub rsync_opts: Option<TextList>,
    /// Hard-link unchanged files to these folders (`--link-dest`).
    pub link_dest: Option<TextList>,
    /// Accepted: the rsync program on a remote side (there is none).
    pub rsync_path: Option<Text>,
    /// Accepted: SSH settings (no SSH within one image).
    pub private_key: Option<Text>,
    /// Accepted: SSH settings (no SSH within one image).
    pub ssh_args: Option<Text>,
    /// Accepted: SSH settings (no SSH within one image).
    pub use_ssh_args: Option<Flag>,
    /// Accepted: SSH settings (no SSH within one image).
    pub ssh_connection_multiplexing: Option<Flag>,
    /// Accepted: SSH settings (no SSH within one image).
    pub verify_host: Option<Flag>,
    /// Accepted: SSH settings (no SSH within one image).
    pub dest_port: Option<Int>,
    /// Accepted: SSH settings (no SSH within one image).
    pub set_remote_user: Option<Flag>,
}

impl SynchronizeParams {
    /// `mode: pull`.
    pub fn pulls(&self) -> bool {
        matches!(self.mode, Some(Choice::Known(SyncMode::Pull)))
    }
}

impl Params for SynchronizeParams {
    fn check(&self) -> Result<(), String> {
        for (name, path) in [("src", &self.src), ("dest", &self.dest)] {
            let path = path.as_str();
            if crate::template::is_template(path) {
                continue;
            }
            if path.starts_with("rsync://") || remote_host(path) {
                return Err(format!(
                    "{name} '{path}' names another host, and an image build has no host but the image; give a path in the image or a file of the role"
                ));
            }
        }
        Ok(())
    }
}

/// `host:path` or `user@host:path`: rsync's remote syntax (a `:` before any `/`).
fn remote_host(path: &str) -> bool {
    match (path.find(':'), path.find('/')) {
        (Some(colon), Some(slash)) => colon < slash,
        (Some(_), None) => true,
        _ => false,
    }
}

/// `synchronize`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "synchronize",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<SynchronizeParams>,
    plan_time: PlanTime::Synchronize,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn another_host_is_refused_and_a_local_path_is_not() {
        let err =
            (SPEC.normalize)(json!({"src": "master:/etc/munge/munge.key", "dest": "/etc/munge/"}))
                .expect_err("remote");
        assert!(err.contains("names another host"), "{err}");
        let err = (SPEC.normalize)(json!({"src": "keys/", "dest": "rsync://mirror/keys"}))
            .expect_err("rsync url");
        assert!(err.contains("dest"), "{err}");
        let ok = (SPEC.normalize)(json!({"src": "keys/", "dest": "/etc/keys", "delete": "yes",
            "rsync_opts": "--exclude=*.bak,--chmod=F600"}))
        .expect("local");
        assert_eq!(ok["delete"], json!(true));
        assert_eq!(ok["rsync_opts"], json!(["--exclude=*.bak", "--chmod=F600"]));
    }
}
