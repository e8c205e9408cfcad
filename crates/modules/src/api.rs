//! What every module shares: the context it runs in, its result and error, and the helpers
//! that read its parameters. The module table in `modules` names the modules; the modules
//! import these from here, so no module reaches back into the table.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value as Json};

use crate::target::Target;

/// What a module needs besides its arguments.
pub struct ModuleCtx<'a> {
    /// Where it acts.
    pub target: &'a dyn Target,
    /// Report what would change, change nothing.
    pub check: bool,
    /// Report before/after of changed files.
    pub diff: bool,
    /// The project root (for the role files a task reads).
    pub project_root: &'a Path,
    /// The project file the task reads (template, copy or script source), if any.
    pub local_file: Option<&'a str>,
    /// The template's text rendered for this task, if any.
    pub rendered: Option<&'a str>,
    /// Environment of the task.
    pub env: &'a [(String, String)],
    /// `ansible_pkg_mgr` of the image.
    pub pkg_mgr: &'a str,
    /// Downloads through the site mirror.
    pub downloads: &'a dyn Downloader,
    /// The build's controller folder, once a task delegated to `localhost` made it: an
    /// absolute `src` of `copy` or `unarchive` is read there first.
    pub controller: Option<&'a crate::rootfs::RootFs>,
}

impl ModuleCtx<'_> {
    /// Where an absolute `src` is read: the build's controller folder when the file is there
    /// (a task delegated to `localhost` put it there) and the task does not say `remote_src`,
    /// else the target.
    pub fn source_fs(
        &self,
        src: &Path,
        remote_src: bool,
    ) -> Result<&crate::rootfs::RootFs, ModuleError> {
        match self.controller.filter(|_| !remote_src) {
            Some(folder) if folder.exists(src)? => Ok(folder),
            _ => Ok(self.target.fs()),
        }
    }

    /// The project file the task reads, as a host path.
    pub fn local_path(&self) -> Result<PathBuf, ModuleError> {
        self.local_file
            .map(|f| self.project_root.join(f))
            .ok_or_else(|| ModuleError::new("the plan names no project file for this task"))
    }
}

/// Fetches artifacts for `get_url` and `unarchive`, and makes `uri`'s requests.
pub trait Downloader {
    /// Downloads `url` (verified against `sha256` when given) into the cache; returns the file.
    fn fetch(&self, url: &str, sha256: Option<&str>) -> Result<PathBuf, DownloadError>;

    /// Makes one HTTP request for `uri` (nothing cached: every request is made).
    fn request(
        &self,
        request: &mirror::http::HttpRequest,
    ) -> Result<mirror::http::HttpResponse, mirror::http::HttpError> {
        mirror::http::send(request)
    }
}

/// A download that failed: what went wrong, and the HTTP status when the mirror answered one.
#[derive(Debug, Clone, PartialEq)]
pub struct DownloadError {
    /// What went wrong and what to do.
    pub message: String,
    /// The mirror's HTTP status, when it answered with an error status.
    pub status: Option<u16>,
}

impl From<DownloadError> for ModuleError {
    fn from(e: DownloadError) -> Self {
        ModuleError::new(e.message)
    }
}

/// A module's outcome.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModuleResult {
    /// Something changed (or would, in check mode).
    pub changed: bool,
    /// A message for people.
    pub msg: Option<String>,
    /// Further result fields (`rc`, `stdout`, `stat`, ...), as Ansible registers them.
    pub fields: Map<String, Json>,
    /// Before and after text of a changed file, for `--diff`.
    pub diff: Option<(String, String, String)>,
    /// The module did not run (check mode for commands, `creates` satisfied, ...).
    pub skipped: bool,
}

impl ModuleResult {
    /// A result with `changed` set.
    pub fn changed(changed: bool) -> Self {
        Self {
            changed,
            ..Self::default()
        }
    }

    /// Adds a result field.
    pub fn with(mut self, key: &str, value: impl Into<Json>) -> Self {
        self.fields.insert(key.to_owned(), value.into());
        self
    }
}

/// A module failure: the task fails with this message.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleError {
    /// What went wrong and what to do.
    pub msg: String,
    /// Result fields to register even though it failed (`rc`, `stdout`, `stderr`).
    pub fields: Map<String, Json>,
}

impl ModuleError {
    /// A failure with a message.
    pub fn new(msg: impl Into<String>) -> Self {
        Self {
            msg: msg.into(),
            fields: Map::new(),
        }
    }
}

impl From<crate::rootfs::FsError> for ModuleError {
    fn from(e: crate::rootfs::FsError) -> Self {
        ModuleError::new(e.to_string())
    }
}

impl From<crate::become_user::BecomeError> for ModuleError {
    fn from(e: crate::become_user::BecomeError) -> Self {
        ModuleError::new(e.to_string())
    }
}

impl From<crate::target::TargetError> for ModuleError {
    fn from(e: crate::target::TargetError) -> Self {
        ModuleError::new(e.to_string())
    }
}

/// Reads a module's typed parameters from its resolved arguments.
pub fn params<P: DeserializeOwned>(module: &str, args: &Json) -> Result<P, ModuleError> {
    serde_json::from_value(args.clone()).map_err(|e| ModuleError::new(format!("{module}: {e}")))
}

/// Optional flag value with a default (deferred values were rendered before modules run).
pub fn flag(value: &Option<crate::types::Flag>, default: bool) -> bool {
    value.as_ref().map(|f| f.or(default)).unwrap_or(default)
}

/// What Ansible's action adds to every module's answer: `stdout_lines` and `stderr_lines`,
/// the lines of `stdout` and `stderr`, where the module gave the text and not its lines.
pub(crate) fn split_output(fields: &mut Map<String, Json>) {
    for (text, lines) in [("stdout", "stdout_lines"), ("stderr", "stderr_lines")] {
        if fields.contains_key(lines) {
            continue;
        }
        let Some(value) = fields.get(text) else {
            continue;
        };
        let split: Vec<Json> = value
            .as_str()
            .unwrap_or_default()
            .lines()
            .map(Json::from)
            .collect();
        fields.insert(lines.to_owned(), Json::Array(split));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn output_gets_its_lines_unless_the_module_gave_them() {
        let mut fields = Map::new();
        fields.insert("stdout".into(), json!("a\nb\n"));
        fields.insert("stderr".into(), json!(false));
        split_output(&mut fields);
        assert_eq!(fields["stdout_lines"], json!(["a", "b"]));
        assert_eq!(fields["stderr_lines"], json!([]));
        let mut given = Map::new();
        given.insert("stdout".into(), json!("a"));
        given.insert("stdout_lines".into(), json!(["kept"]));
        split_output(&mut given);
        assert_eq!(given["stdout_lines"], json!(["kept"]));
        assert!(!given.contains_key("stderr_lines"));
    }
}
