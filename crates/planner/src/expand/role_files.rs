//! The project files a task names: a role's `files/`/`templates/` sources, the folders a
//! source only the build knows is looked for in, a role's own `library/` modules, and its
//! `action_plugins/`, which an image build cannot run.

use std::path::{Path, PathBuf};

use crate::error::{ErrorKind, Location, PlanError, Result};
use crate::planner::Planner;
use crate::vars::VarValue;
use serde_json::Value as Json;

use super::Ctx;

impl Planner<'_> {
    /// The file of the role's own module `name` (`library/<name>.py`, `.sh`, or bare), if the
    /// task's role has one.
    pub(crate) fn role_module_file(&self, name: &str, ctx: &Ctx) -> Option<PathBuf> {
        let library = ctx.role_dir.as_ref()?.join("library");
        crate::modules::role_module::file_names(name)
            .into_iter()
            .map(|file| library.join(file))
            .find(|path| self.sources.is_file(path))
    }

    /// An unknown module that is an action plugin of the role (`action_plugins/<name>.py`):
    /// refused with why. Ansible runs such a plugin inside its own Python process on the
    /// controller, with the controller's internals (connection, loaders, templar); an image
    /// build has no Ansible controller to run it in.
    pub(crate) fn role_action_plugin(&self, error: PlanError, ctx: &Ctx) -> PlanError {
        let ErrorKind::UnknownKey { key, .. } = &error.kind else {
            return error;
        };
        let plugin = ctx
            .role_dir
            .as_ref()
            .map(|dir| dir.join("action_plugins").join(format!("{key}.py")))
            .filter(|path| self.sources.is_file(path));
        match plugin {
            Some(path) => PlanError::new(
                error.location.clone(),
                ErrorKind::Unsupported {
                    key: key.clone(),
                    why: format!(
                        "it is an action plugin of the role ({}), Python code Ansible runs inside its own controller process; an image build has no Ansible controller to run it in: use a module (library/) or the tasks it stands for",
                        path.display()
                    ),
                },
            ),
            None => error,
        }
    }

    /// The folders a role's file named in a task is looked for in, in order.
    pub(crate) fn file_search(&self, sub: &str, ctx: &Ctx) -> Vec<PathBuf> {
        let here = ctx.file.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut dirs = Vec::new();
        if let Some(role_dir) = &ctx.role_dir {
            dirs.push(role_dir.join(sub));
            dirs.push(role_dir.clone());
            // Then the roles that included this one, nearest first: Ansible's search path
            // follows the role's dependency chain.
            if let Some(VarValue::Raw(Json::Array(parents))) =
                ctx.scope.get("ansible_parent_role_paths")
            {
                for parent in parents.iter().filter_map(Json::as_str) {
                    dirs.push(Path::new(parent).join(sub));
                    dirs.push(PathBuf::from(parent));
                }
            }
        }
        dirs.push(here.join(sub));
        dirs.push(here);
        dirs.dedup();
        dirs
    }

    /// The folders a source named only at build time is looked for in, recorded as inputs.
    pub(crate) fn search_dirs(&mut self, sub: &str, ctx: &Ctx) -> Vec<String> {
        let dirs: Vec<PathBuf> = self
            .file_search(sub, ctx)
            .into_iter()
            .filter(|d| self.sources.is_dir(d))
            .collect();
        for dir in &dirs {
            self.sources.record(dir);
        }
        dirs.iter().map(|d| d.display().to_string()).collect()
    }

    /// Finds a file a task reads from the project: the role's `files/` or `templates/` first.
    pub(super) fn local_file(
        &self,
        name: &str,
        sub: &str,
        ctx: &Ctx,
        at: &Location,
        what: &'static str,
    ) -> Result<PathBuf> {
        let mut candidates: Vec<PathBuf> = self
            .file_search(sub, ctx)
            .into_iter()
            .map(|d| d.join(name))
            .collect();
        // A project path, as with_first_found and with_fileglob give.
        candidates.push(PathBuf::from(name));
        candidates.dedup();
        if name.split('/').any(|p| p == "..") {
            return Err(PlanError::new(
                at.clone(),
                ErrorKind::Recipe(format!("{what} '{name}' must be inside the role folder")),
            ));
        }
        candidates
            .iter()
            .find(|c| self.sources.is_file(c) || self.sources.is_dir(c))
            .cloned()
            .ok_or_else(|| {
                PlanError::new(
                    at.clone(),
                    ErrorKind::MissingFile {
                        what,
                        name: name.to_owned(),
                        searched: candidates
                            .iter()
                            .map(|c| c.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                    },
                )
            })
    }
}
