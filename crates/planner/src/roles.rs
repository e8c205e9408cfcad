//! Finding roles and reading their `defaults/`, `vars/`, `tasks/`, `handlers/` and `meta/`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::collections::QualifiedRole;
use crate::error::{suggest, ErrorKind, Location, PlanError, Result};
use crate::recipe::{var_map, Recipe};
use crate::source::Sources;
use crate::template::Templar;
use crate::vars::{layer_from, Layer, Scope, VarValue};

/// Folders searched for roles, relative to the project root.
pub const ROLE_PATHS: &[&str] = &["roles", "images/roles"];

/// The role folder of `name` (relative to the root), or an error listing what was searched.
pub fn find_role(sources: &Sources, root: &Path, name: &str, at: Location) -> Result<PathBuf> {
    if name.contains("..") || name.starts_with('/') {
        return Err(PlanError::new(
            at,
            ErrorKind::Recipe(format!("role name '{name}' must be a folder below roles/")),
        ));
    }
    // A role of a collection (`namespace.collection.role`) is looked for in the project's
    // installed collections first; a plain role folder of that name comes after, as Ansible
    // looks for a dotted name in its roles path too.
    let candidates: Vec<PathBuf> = QualifiedRole::parse(name)
        .map(|q| q.candidates())
        .unwrap_or_default()
        .into_iter()
        .chain(ROLE_PATHS.iter().map(|base| Path::new(base).join(name)))
        .collect();
    if let Some(found) = candidates.iter().find(|rel| sources.is_dir(rel)) {
        return Ok(found.clone());
    }
    // A role named by its path (`{{ role_path }}/roles/x`): Ansible's last resort.
    if name.contains('/') && sources.is_dir(Path::new(name)) {
        return Ok(PathBuf::from(name));
    }
    let known = known_roles(root);
    let searched = candidates
        .iter()
        .map(|c| c.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let to_do = if QualifiedRole::parse(name).is_some() {
        " (a role of a collection: install it with 'ansible-galaxy collection install -p collections')"
    } else {
        ""
    };
    Err(PlanError::new(
        at,
        ErrorKind::MissingRole {
            name: name.to_owned(),
            searched,
            suggestion: format!("{}{to_do}", suggest(name, known.iter().map(String::as_str))),
        },
    ))
}

/// Role names below `roles/` (two levels, for nested names such as `common/bootstrap`).
pub fn known_roles(root: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let list = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default()
    };
    let roles = root.join("roles");
    for dir in list(&roles) {
        let Ok(rel) = dir.strip_prefix(&roles) else {
            continue;
        };
        if dir.join("tasks").is_dir() {
            names.push(rel.to_string_lossy().into_owned());
        }
        for sub in list(&dir) {
            if sub.join("tasks").is_dir() {
                if let Ok(rel) = sub.strip_prefix(&roles) {
                    names.push(rel.to_string_lossy().into_owned());
                }
            }
        }
    }
    names.sort();
    names
}

/// The first of `dir/stem.yml`, `dir/stem.yaml`, `dir/stem` that exists.
pub fn yaml_file(sources: &Sources, dir: &Path, stem: &str) -> Option<PathBuf> {
    let has_ext = stem.ends_with(".yml") || stem.ends_with(".yaml");
    let candidates: Vec<PathBuf> = if has_ext {
        vec![dir.join(stem)]
    } else {
        vec![
            dir.join(format!("{stem}.yml")),
            dir.join(format!("{stem}.yaml")),
            dir.join(stem),
        ]
    };
    candidates.into_iter().find(|p| sources.is_file(p))
}

/// A role's `defaults/<from>` or `vars/<from>` as a variable layer (empty when absent).
pub fn var_layer(
    sources: &mut Sources,
    role_dir: &Path,
    sub: &str,
    from: &str,
) -> Result<Arc<Layer>> {
    let Some(path) = yaml_file(sources, &role_dir.join(sub), from) else {
        if from != "main" {
            return Err(PlanError::new(
                Location::file(role_dir),
                ErrorKind::MissingFile {
                    what: "vars file",
                    name: from.to_owned(),
                    searched: role_dir
                        .join(sub)
                        .join(format!("{from}.yml"))
                        .display()
                        .to_string(),
                },
            ));
        }
        return Ok(Arc::new(Layer::new()));
    };
    let node = sources.yaml(&path)?;
    let vars = var_map(&node, &format!("{sub}/{from}"), &path)?;
    Ok(layer_from(&vars))
}

/// A role's `meta/main.yml`: the roles it depends on, and whether it may run again with the
/// same parameters (`allow_duplicates`).
pub struct RoleMeta {
    /// The file, for locations.
    pub path: PathBuf,
    /// `dependencies:`, each as a role entry of a play (a name, or `role:` with its
    /// parameters, `vars`, `when` and `tags`).
    pub dependencies: Vec<crate::recipe::RoleRef>,
    /// `allow_duplicates: true`.
    pub allow_duplicates: bool,
}

/// Reads a role's `meta/main.yml` (none: no dependencies).
pub fn role_meta(sources: &mut Sources, role_dir: &Path) -> Result<Option<RoleMeta>> {
    let Some(path) = yaml_file(sources, &role_dir.join("meta"), "main") else {
        return Ok(None);
    };
    let node = sources.yaml(&path)?;
    let dependencies = match node.get("dependencies") {
        Some(deps) => crate::recipe::Recipe::role_refs(deps, &path)?,
        None => Vec::new(),
    };
    let allow_duplicates = node
        .get("allow_duplicates")
        .is_some_and(|v| matches!(v.to_json(), serde_json::Value::Bool(true)));
    Ok(Some(RoleMeta {
        path,
        dependencies,
        allow_duplicates,
    }))
}

/// `key` as the defaults of `role` set it, rendered with `scope`, when the recipe runs that
/// role and the defaults set it (a value only the build knows is none).
pub(crate) fn role_default(
    sources: &mut Sources,
    root: &Path,
    recipe: &Recipe,
    role: &str,
    key: &str,
    templar: &Templar,
    scope: &Scope,
) -> Result<Option<serde_json::Value>> {
    let Some(entry) = recipe.roles.iter().find(|r| r.name == role) else {
        return Ok(None);
    };
    let at = Location::new(&recipe.path, entry.line);
    let dir = find_role(sources, root, role, at)?;
    let defaults = var_layer(sources, &dir, "defaults", "main")?;
    let Some(VarValue::Raw(raw)) = defaults.get(key) else {
        return Ok(None);
    };
    Ok(templar.render(raw, scope).ok().flatten())
}
