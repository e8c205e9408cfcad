//! `imgbuild plan`: the resolved tasks of an image.

use std::process::ExitCode;

use anyhow::anyhow;
use planner::{PlanOptions, Project};

use crate::Failure;

/// Plans `image` and prints the plan as a tree or as JSON.
pub fn run(
    project: &Project,
    image: &str,
    opts: &PlanOptions,
    json: bool,
) -> Result<ExitCode, Failure> {
    let plan = planner::plan(project, image, opts)?;
    super::output::print_warnings(&plan.warnings);
    // A vaulted value shows as its marker, `<vault:0123456789abcdef>`, never as clear text.
    if json {
        let mut value = serde_json::to_value(&plan)
            .map_err(|e| Failure::Run(anyhow!("cannot write JSON: {e}")))?;
        planner::vault::redact_json(&mut value);
        let text = serde_json::to_string_pretty(&value)
            .map_err(|e| Failure::Run(anyhow!("cannot write JSON: {e}")))?;
        println!("{}", mirror::redact_credentials(&text));
    } else {
        let shown = planner::redact_plan(&plan);
        print!(
            "{}",
            mirror::redact_credentials(&crate::render::plan_tree(&shown))
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The facts of each OS a role alone can be planned for, and the kernel pinned when the
/// project's matrix pins none for that OS.
const OS_FACTS: &[(&str, &str, &str, &str)] = &[
    (
        "rocky-8.10",
        "Rocky",
        "8.10",
        "4.18.0-553.56.1.el8_10.x86_64",
    ),
    ("rocky-9.5", "Rocky", "9.5", "5.14.0-503.40.1.el9_5.x86_64"),
    ("ubuntu-22.04", "Ubuntu", "22.04", "6.8.0-1019-nvidia"),
    ("ubuntu-24.04", "Ubuntu", "24.04", "6.8.0-31-generic"),
    ("debian-12", "Debian", "12", "6.1.0-50-amd64"),
];

/// A collection's source and its namespace and name.
type Collection = (std::path::PathBuf, (String, String));

/// The collection whose source holds `role` (`<collection>/roles/<role>` beside its
/// galaxy.yml): such a role is planned as ansible-playbook runs it once the collection is
/// installed, by its full name, its sibling roles known by theirs.
fn collection_of(role: &std::path::Path) -> Option<Collection> {
    let root = role
        .parent()
        .filter(|dir| dir.ends_with("roles"))?
        .parent()?;
    planner::collections::collection_identity(root).map(|id| (root.to_owned(), id))
}

/// The kernel this project's matrix pins for `distro` `version` (the first image of that OS
/// that pins one), so a role is planned for the kernel the site builds with.
fn matrix_kernel(
    project: &Project,
    distro: &str,
    version: &str,
    opts: &PlanOptions,
) -> Option<String> {
    let rows = planner::matrix::matrix(project, opts).ok()?;
    rows.into_iter()
        .filter(|row| row.os == distro && row.os_version == version)
        .find_map(|row| row.kernel)
}

/// Links the collection where the throwaway project's recipes find it.
fn install_collection(project: &std::path::Path, collection: &Collection) -> std::io::Result<()> {
    let (source, (namespace, name)) = collection;
    let installed = project
        .join(planner::collections::COLLECTION_PATHS[0])
        .join(namespace);
    std::fs::create_dir_all(&installed)?;
    std::os::unix::fs::symlink(source, installed.join(name))
}

/// Links the role (as `name`) and the roles beside it into the folder `roles`, which it makes:
/// Ansible finds a role's dependencies beside it first (deepops' roles name `facts`, a
/// sibling).
fn link_roles(role: &std::path::Path, name: &str, roles: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(roles)?;
    std::os::unix::fs::symlink(role, roles.join(name))?;
    for sibling in role
        .parent()
        .map(std::fs::read_dir)
        .transpose()?
        .into_iter()
        .flatten()
    {
        let sibling = sibling?;
        let path = sibling.path();
        let is_role = ["tasks", "meta"].iter().any(|d| path.join(d).is_dir());
        if path != role && is_role {
            std::os::unix::fs::symlink(&path, roles.join(sibling.file_name()))?;
        }
    }
    Ok(())
}

/// Plans one role folder for `os`: a throwaway project holding the role and the roles beside it
/// (linked) and a recipe with that OS's facts, plus this project's `mirror.toml` when there is
/// one.
pub fn run_role(
    role: &std::path::Path,
    os: &str,
    dir: Option<&std::path::Path>,
    opts: &PlanOptions,
    json: bool,
) -> Result<ExitCode, Failure> {
    let role = role
        .canonicalize()
        .map_err(|e| Failure::Input(anyhow!("--role {}: {e}", role.display())))?;
    if !role.join("tasks").is_dir() {
        return Err(Failure::Input(anyhow!(
            "--role {}: not a role folder (it has no tasks/)",
            role.display()
        )));
    }
    let Some((_, distro, version, default_kernel)) = OS_FACTS.iter().find(|(name, ..)| *name == os)
    else {
        let names: Vec<&str> = OS_FACTS.iter().map(|(n, ..)| *n).collect();
        return Err(Failure::Input(anyhow!(
            "--os {os}: one of {}",
            names.join(", ")
        )));
    };
    let name = role
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "role".into());
    let collection = collection_of(&role);
    let recipe_role = match &collection {
        Some((_, (namespace, collection))) => format!("{namespace}.{collection}.{name}"),
        None => name.clone(),
    };
    let here = match dir {
        Some(d) => Some(d.to_owned()),
        None => std::env::current_dir().ok(),
    };
    let project = here.and_then(|d| Project::discover(&d));
    let kernel = project
        .as_ref()
        .and_then(|p| matrix_kernel(p, distro, version, opts))
        .unwrap_or_else(|| (*default_kernel).to_owned());
    let work = tempfile::tempdir().map_err(|e| Failure::Run(anyhow!(e)))?;
    let root = work.path();
    let setup = || -> std::io::Result<()> {
        std::fs::create_dir_all(root.join("images"))?;
        link_roles(&role, &name, &root.join("roles"))?;
        if let Some(collection) = &collection {
            install_collection(root, collection)?;
        }
        std::fs::write(
            root.join("images/role-check.yml"),
            format!(
                "- hosts: localhost\n  vars:\n    kernel_version: \"{kernel}\"\n  facts: {{distribution: {distro}, distribution_version: \"{version}\"}}\n  roles: [\"{recipe_role}\"]\n"
            ),
        )?;
        if let Some(project) = &project {
            let mirror = project.root.join("mirror.toml");
            if mirror.is_file() {
                std::fs::copy(mirror, root.join("mirror.toml"))?;
            }
        }
        Ok(())
    };
    setup().map_err(|e| Failure::Run(anyhow!("preparing the role check: {e}")))?;
    let project = Project::at(root)?;
    run(&project, "role-check", opts, json)
}
