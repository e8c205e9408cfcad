//! `ansible.posix.synchronize`: rsync a file or folder into the image, as Ansible's module
//! does, with rsync run in the image. The source is a file of the role (`files/`), or, with
//! `delegate_to` naming the image itself, a path in the image (rsync there, from path to path).
//!
//! Rsync in the image, with the command line Ansible's module builds.
//!
//! Ansible runs rsync on the host a task delegates to. Delegated to the image itself, both
//! paths are in the image; pushed from the role (no delegation), imgbuild stages the role's
//! file or folder in the image's `/tmp` first (owned by root, modes and times kept), as a
//! container connection hands rsync the controller's files, and rsync copies from there.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Int, Text, TextList};
use crate::rootfs::RootFs;
use crate::target::Cmd;
use ansible::template::filters::shlex_quote;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};

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
            if ansible::template::is_template(path) {
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

// How it runs in the rootfs.

/// What rsync prints before each item it changed (Ansible's marker).
const CHANGED_MARKER: &str = "<<CHANGED>>";

/// `synchronize`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: SynchronizeParams = params(SPEC.name, args)?;
    let staged = match ctx.local_file {
        Some(_) => Some(stage(ctx, &ctx.local_path()?)?),
        None => None,
    };
    let source = match &staged {
        // A trailing '/' copies the folder's contents: kept from the role's src.
        Some(stage) if p.src.as_str().ends_with('/') => format!("{}/", stage.display()),
        Some(stage) => stage.display().to_string(),
        None => p.src.to_string(),
    };
    let argv = rsync_argv(&p, &source, ctx.check);
    let out = ctx.target.run(&Cmd {
        argv: argv.clone(),
        env: ctx.env.to_vec(),
        cwd: None,
        stdin: None,
        user: None,
    });
    if let Some(stage) = &staged {
        if let Some(folder) = stage.parent() {
            ctx.target.fs().remove_all(folder)?;
        }
    }
    let out = out?;
    let cmd = argv
        .iter()
        .map(|w| shlex_quote(w))
        .collect::<Vec<_>>()
        .join(" ");
    if out.rc == 127 {
        return Err(ModuleError::new(
            "synchronize runs rsync in the image, as Ansible does on the host it delegates to, and the image has no rsync; install the rsync package in an earlier task",
        ));
    }
    if out.rc != 0 {
        let mut error = ModuleError::new(format!("rsync failed: {}", out.stderr.trim()));
        error.fields.insert("rc".into(), Json::from(out.rc));
        error.fields.insert("cmd".into(), Json::from(cmd));
        return Err(error);
    }
    let cleaned = out.stdout.replace(CHANGED_MARKER, "");
    let lines: Vec<Json> = cleaned
        .lines()
        .filter(|l| !l.is_empty())
        .map(Json::from)
        .collect();
    let changed = match &p.link_dest {
        Some(dests) if !dests.0.is_empty() => !out.stdout.contains(&format!("{CHANGED_MARKER}.")),
        _ => out.stdout.contains(CHANGED_MARKER),
    };
    Ok(ModuleResult::changed(changed)
        .with("cmd", cmd)
        .with("rc", 0)
        .with("msg", cleaned)
        .with("stdout_lines", Json::Array(lines)))
}

/// Copies the role's file or folder to a fresh folder under the image's `/tmp`; returns the
/// copy's path there.
fn stage(ctx: &ModuleCtx, local: &Path) -> Result<PathBuf, ModuleError> {
    let folder = PathBuf::from(format!("/tmp/.imgbuild-synchronize-{}", std::process::id()));
    let fs = ctx.target.fs();
    fs.remove_all(&folder)?;
    fs.mkdir_all(&folder, 0o700)?;
    let name = local.file_name().unwrap_or_default();
    let inside = folder.join(name);
    copy_into(fs, local, &inside)?;
    Ok(inside)
}

/// Copies a host file, folder or symlink into the rootfs at `inside`, modes and times kept.
fn copy_into(fs: &RootFs, host: &Path, inside: &Path) -> Result<(), ModuleError> {
    let io = |e: std::io::Error| ModuleError::new(format!("{}: {e}", host.display()));
    let meta = std::fs::symlink_metadata(host).map_err(io)?;
    let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777;
    let mtime = std::os::unix::fs::MetadataExt::mtime(&meta);
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(host).map_err(io)?;
        fs.symlink(&target.to_string_lossy(), inside)?;
    } else if meta.is_dir() {
        fs.mkdir_all(inside, mode)?;
        fs.chmod(inside, mode)?;
        let mut entries: Vec<PathBuf> = std::fs::read_dir(host)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for entry in entries {
            let name = entry.file_name().unwrap_or_default();
            copy_into(fs, &entry, &inside.join(name))?;
        }
    } else {
        fs.copy_in(host, inside, Some(mode))?;
    }
    fs.set_times(inside, mtime)?;
    Ok(())
}

/// The rsync command line of ansible.posix's synchronize module for these parameters.
pub fn rsync_argv(p: &SynchronizeParams, source: &str, check: bool) -> Vec<String> {
    let on = |f: &Option<Flag>, default: bool| f.as_ref().map_or(default, |f| f.or(default));
    let set = |f: &Option<Flag>| f.as_ref().map(|f| f.or(false));
    let mut argv = vec!["rsync".to_owned()];
    let mut push = |word: &str| argv.push(word.to_owned());
    if on(&p.delay_updates, true) {
        push("--delay-updates");
        push("-F");
    }
    if on(&p.compress, true) {
        push("--compress");
    }
    if let Some(Int::Known(timeout)) = p.rsync_timeout.as_ref().filter(|t| **t != Int::Known(0)) {
        push(&format!("--timeout={timeout}"));
    }
    if check {
        push("--dry-run");
    }
    for (flag, default, word) in [
        (&p.delete, false, "--delete-after"),
        (&p.existing_only, false, "--existing"),
        (&p.checksum, false, "--checksum"),
        (&p.copy_links, false, "--copy-links"),
    ] {
        if on(flag, default) {
            push(word);
        }
    }
    let archive = on(&p.archive, true);
    if archive {
        push("--archive");
    }
    for (flag, name) in [
        (&p.recursive, "recursive"),
        (&p.links, "links"),
        (&p.perms, "perms"),
        (&p.times, "times"),
        (&p.owner, "owner"),
        (&p.group, "group"),
    ] {
        // With --archive an explicit `no` turns one off; without it an explicit `yes` adds it.
        match (archive, set(flag)) {
            (true, Some(false)) => push(&format!("--no-{name}")),
            (false, Some(true)) => push(&format!("--{name}")),
            _ => {}
        }
    }
    if on(&p.dirs, false) {
        push("--dirs");
    }
    for opt in p.rsync_opts.iter().flat_map(|o| o.0.iter()) {
        push(opt);
    }
    if on(&p.partial, false) {
        push("--partial");
    }
    if let Some(dests) = p.link_dest.as_ref().filter(|d| !d.0.is_empty()) {
        push("-H");
        push("-vv");
        for dest in &dests.0 {
            push(&format!("--link-dest={dest}"));
        }
    }
    push(&format!("--out-format={CHANGED_MARKER}%i %n%L"));
    push(source);
    push(p.dest.as_str());
    argv
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn argv(args: Json) -> Vec<String> {
        let normalized = (SPEC.normalize)(args).expect("valid");
        let p: SynchronizeParams = serde_json::from_value(normalized).expect("params");
        rsync_argv(&p, p.src.as_str(), false)
    }

    /// The command lines ansible.posix 1.5's module builds for the same arguments.
    #[test]
    fn the_command_line_is_ansibles() {
        assert_eq!(
            argv(json!({"src": "/a/", "dest": "/b"})).join(" "),
            "rsync --delay-updates -F --compress --archive --out-format=<<CHANGED>>%i %n%L /a/ /b"
        );
        assert_eq!(
            argv(
                json!({"src": "/a", "dest": "/b", "archive": false, "recursive": true,
                "times": false, "delete": true, "checksum": true, "delay_updates": false,
                "rsync_opts": ["--exclude=*.bak"]})
            )
            .join(" "),
            "rsync --compress --delete-after --checksum --recursive --exclude=*.bak \
             --out-format=<<CHANGED>>%i %n%L /a /b"
        );
        assert_eq!(
            argv(
                json!({"src": "/a", "dest": "/b", "links": "no", "owner": false,
                "compress": false, "dirs": true})
            )
            .join(" "),
            "rsync --delay-updates -F --archive --no-links --no-owner --dirs \
             --out-format=<<CHANGED>>%i %n%L /a /b"
        );
    }

    #[test]
    fn the_registered_cmd_is_shlex_quoted() {
        assert_eq!(shlex_quote("--archive"), "--archive");
        assert_eq!(
            shlex_quote("--out-format=<<CHANGED>>%i %n%L"),
            "'--out-format=<<CHANGED>>%i %n%L'"
        );
        assert_eq!(shlex_quote("it's"), "'it'\"'\"'s'");
    }
}

#[cfg(test)]
mod spec_tests {
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
