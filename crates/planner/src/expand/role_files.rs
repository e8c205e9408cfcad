//! The project files a task names: a role's `files/`/`templates/` sources, the folders a
//! source only the build knows is looked for in, the code of a module imgbuild does not
//! implement (a role's own `library/`, the playbook's, a collection's, ansible-core's), and
//! the action plugins, which an image build cannot run.

use std::path::{Path, PathBuf};

use crate::error::{ErrorKind, Location, PlanError, Result};
use crate::planner::Planner;
use crate::vars::VarValue;
use serde_json::Value as Json;

use super::Ctx;

/// Ansible's code for a module imgbuild does not implement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AnsibleModule {
    /// The module's file (or its action plugin's): relative to the project, or on the machine
    /// running the build.
    pub path: PathBuf,
    /// For a module of the machine's ansible-core or collections, where it comes from
    /// (`ansible-core 2.14.18`, `community.general 6.6.2`); none for the project's own.
    pub host: Option<String>,
    /// `path` is an action plugin, Python that Ansible runs in its controller process: the
    /// build runs the task with ansible-playbook itself (see `modules::ansible_action`).
    pub action: bool,
}

impl Planner<'_> {
    /// Where the code of the module `name` is, as Ansible's module finder looks, when imgbuild
    /// has no module of that name: a short name (or `ansible.legacy.name`) in the role's
    /// `library/`, the playbook's `library/` (`images/library/`), then ansible-core's own
    /// modules, then where ansible-core's routing table sends it (`pacman` to
    /// `community.general.pacman`); `ansible.builtin.name` in ansible-core; `namespace.collection.name` in the
    /// project's collections, then the machine's. An action plugin of that name comes first,
    /// as Ansible's action loader takes it (see [`Self::action_plugin`]); ansible-core's own
    /// are none of these (see [`Self::role_action_plugin`]).
    pub(crate) fn ansible_module(&self, name: &str, ctx: &Ctx) -> Option<AnsibleModule> {
        let project = |path: PathBuf| AnsibleModule {
            path,
            host: None,
            action: false,
        };
        let host = || modules::ansible_code::host().ok();
        if let Some(action) = self.action_plugin(name, ctx) {
            return Some(action);
        }
        let short = name.strip_prefix("ansible.legacy.").unwrap_or(name);
        if !short.contains('.') {
            let mut libraries: Vec<PathBuf> =
                ctx.role_dir.iter().map(|dir| dir.join("library")).collect();
            libraries.push(PathBuf::from("images/library"));
            let own = libraries.iter().find_map(|library| {
                modules::role_module::file_names(short)
                    .into_iter()
                    .map(|file| library.join(file))
                    .find(|path| self.sources.is_file(path))
            });
            return own
                .map(project)
                .or_else(|| builtin(host()?, short))
                .or_else(|| {
                    // A name modules had before collections, routed as ansible-core routes it.
                    let routed = host()?.routed_module(short)?;
                    self.ansible_module(routed, ctx)
                });
        }
        if let Some(builtin_name) = name.strip_prefix("ansible.builtin.") {
            return builtin(host()?, builtin_name);
        }
        let (namespace, collection, module) = modules::ansible_code::split_fqcn(name)?;
        let in_project = crate::collections::COLLECTION_PATHS
            .iter()
            .find_map(|base| {
                let path = Path::new(base)
                    .join(namespace)
                    .join(collection)
                    .join("plugins/modules")
                    .join(format!("{module}.py"));
                self.sources.is_file(&path).then_some(path)
            });
        in_project.map(project).or_else(|| {
            let found = host()?.collection_module(name)?;
            Some(AnsibleModule {
                path: found.path,
                host: Some(found.origin),
                action: false,
            })
        })
    }

    /// The action plugin Ansible runs for `name`, when imgbuild has no module of that name and
    /// the machine has ansible-core to run it with: a short name in the role's
    /// `action_plugins/` or the playbook's (`images/action_plugins/`), a collection's
    /// `plugins/action/` (the project's collections, then the machine's). ansible-core's own
    /// action plugins (`reboot`, `wait_for_connection`, `pause`, ...) act on a running host or
    /// on the controller, not on an image, and are not run this way.
    fn action_plugin(&self, name: &str, ctx: &Ctx) -> Option<AnsibleModule> {
        let host = modules::ansible_code::host().ok()?;
        let short = name.strip_prefix("ansible.legacy.").unwrap_or(name);
        if !short.contains('.') {
            let mut folders: Vec<PathBuf> = ctx
                .role_dir
                .iter()
                .map(|dir| dir.join("action_plugins"))
                .collect();
            folders.push(PathBuf::from("images/action_plugins"));
            let path = folders
                .iter()
                .map(|folder| folder.join(format!("{short}.py")))
                .find(|path| self.sources.is_file(path))?;
            return Some(AnsibleModule {
                path,
                host: None,
                action: true,
            });
        }
        let (namespace, collection, plugin) = modules::ansible_code::split_fqcn(name)?;
        let in_project = crate::collections::COLLECTION_PATHS
            .iter()
            .map(|base| {
                Path::new(base)
                    .join(namespace)
                    .join(collection)
                    .join("plugins/action")
                    .join(format!("{plugin}.py"))
            })
            .find(|path| self.sources.is_file(path));
        if let Some(path) = in_project {
            return Some(AnsibleModule {
                path,
                host: None,
                action: true,
            });
        }
        let path = host.collection_action(name)?;
        // plugins/action/<plugin>.py, in the collection's folder.
        let root = path.ancestors().nth(3).unwrap_or(&path);
        let origin = modules::ansible_code::collection_origin(root, namespace, collection);
        Some(AnsibleModule {
            path,
            host: Some(origin),
            action: true,
        })
    }

    /// An unknown module that is an action plugin no build can run: refused with why. A role's
    /// (`action_plugins/<name>.py`) or a collection's runs through ansible-playbook (see
    /// [`Self::ansible_module`]), so it is refused only where the machine has no ansible-core;
    /// ansible-core's own act on a running host or on the controller.
    pub(crate) fn role_action_plugin(&self, error: PlanError, ctx: &Ctx) -> PlanError {
        let ErrorKind::UnknownKey { key, .. } = &error.kind else {
            return error;
        };
        let plugin = ctx
            .role_dir
            .as_ref()
            .map(|dir| dir.join("action_plugins").join(format!("{key}.py")))
            .filter(|path| self.sources.is_file(path))
            .map(|path| ("the role", path))
            .or_else(|| host_action_plugin(key));
        if let (None, Err(missing)) = (&plugin, modules::ansible_code::host()) {
            if key.contains('.') {
                // A collection's or ansible-core's module, and no Ansible here to run it with.
                return PlanError::new(
                    error.location.clone(),
                    ErrorKind::Unsupported {
                        key: key.clone(),
                        why: format!("imgbuild does not implement it, and {}", missing.msg),
                    },
                );
            }
        }
        let Some((whose, path)) = plugin else {
            return error;
        };
        let why = match modules::ansible_code::host() {
            // Found, but no Ansible here to run it with.
            Err(missing) if whose != "ansible-core" => format!(
                "it is an action plugin of {whose} ({}), which imgbuild runs with ansible-playbook over its chroot connection, and {}",
                path.display(),
                missing.msg
            ),
            _ => format!(
                "it is an action plugin of {whose} ({}), which acts on a running host or on Ansible's controller, and an image build has neither: use the tasks it stands for",
                path.display()
            ),
        };
        PlanError::new(
            error.location.clone(),
            ErrorKind::Unsupported {
                key: key.clone(),
                why,
            },
        )
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

/// ansible-core's module `name` (short or `ansible.builtin.`), unless Ansible runs it through an
/// action plugin of its own.
fn builtin(host: &modules::ansible_code::HostAnsible, name: &str) -> Option<AnsibleModule> {
    if host.builtin_action(name).is_some() {
        return None;
    }
    let found = host.builtin_module(name)?;
    Some(AnsibleModule {
        path: found.path,
        host: Some(found.origin),
        action: false,
    })
}

/// The action plugin of the machine's ansible-core or collections that Ansible runs for the
/// module `key`, with whose it is.
fn host_action_plugin(key: &str) -> Option<(&'static str, PathBuf)> {
    let host = modules::ansible_code::host().ok()?;
    let short = key
        .strip_prefix("ansible.builtin.")
        .or_else(|| key.strip_prefix("ansible.legacy."))
        .unwrap_or(key);
    if !short.contains('.') {
        return host
            .builtin_action(short)
            .map(|path| ("ansible-core", path));
    }
    host.collection_action(key)
        .map(|path| ("its collection", path))
}
