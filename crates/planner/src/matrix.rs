//! The version matrix: one row per image with its OS, kernel, MOFED or DOCA and NVIDIA versions.

use serde::Serialize;
use serde_json::Value as Json;

use crate::error::Result;
use crate::planner::{recipe_facts, PlanOptions};
use crate::recipe::Project;
use crate::source::Sources;
use crate::template::Templar;

/// One image's row.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MatrixRow {
    /// Image name.
    pub image: String,
    /// Distribution.
    pub os: String,
    /// Distribution version.
    pub os_version: String,
    /// `kernel_version`.
    pub kernel: Option<String>,
    /// `mofed_version` (none when `doca_version` chooses DOCA-OFED instead).
    pub mofed: Option<String>,
    /// `doca_version`: the `mofed` role installs DOCA-OFED in place of MLNX_OFED.
    pub doca: Option<String>,
    /// `nvidia_version`.
    pub nvidia: Option<String>,
    /// `nvidia_kernel_flavor` (the recipe's, else the `nvidia` role's default), for an image
    /// with the `nvidia` role.
    #[serde(rename = "nvidia_kernel_flavor")]
    pub nvidia_flavor: Option<String>,
}

/// The matrix of every image in the project, sorted by image name.
pub fn matrix(project: &Project, opts: &PlanOptions) -> Result<Vec<MatrixRow>> {
    let templar = Templar::new();
    let mut rows = Vec::new();
    for image in project.images()? {
        let mut sources = Sources::new(&project.root);
        let facts = recipe_facts(project, &mut sources, &templar, &image, opts)?;
        let var = |name: &str| -> Option<String> {
            facts.scope.get(name)?;
            match templar.render(&Json::String(format!("{{{{ {name} }}}}")), &facts.scope) {
                Ok(Some(Json::String(s))) => Some(s),
                Ok(Some(Json::Null)) | Ok(None) | Err(_) => None,
                Ok(Some(other)) => Some(other.to_string()),
            }
        };
        let fact = |name: &str| {
            facts
                .facts
                .get(name)
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        rows.push(MatrixRow {
            image: image.clone(),
            os: fact("ansible_distribution"),
            os_version: fact("ansible_distribution_version"),
            kernel: var("kernel_version"),
            // As the role chooses: doca_version set means DOCA-OFED, not MLNX_OFED.
            mofed: var("mofed_version").filter(|_| var("doca_version").is_none()),
            doca: var("doca_version"),
            nvidia: var("nvidia_version"),
            nvidia_flavor: match var("nvidia_kernel_flavor") {
                Some(flavor) => Some(flavor),
                None => role_default(
                    project,
                    &mut sources,
                    &templar,
                    &facts,
                    "nvidia_kernel_flavor",
                )?,
            },
        });
    }
    Ok(rows)
}

/// `key` as the default of the role `ROLE_DEFAULTED` names for it, when the recipe runs that
/// role (a flavour the recipe leaves to the role).
fn role_default(
    project: &Project,
    sources: &mut Sources,
    templar: &Templar,
    facts: &crate::planner::RecipeFacts,
    key: &str,
) -> Result<Option<String>> {
    let Some((role, _)) = crate::intent::ROLE_DEFAULTED
        .iter()
        .find(|(_, k)| *k == key)
    else {
        return Ok(None);
    };
    let (recipe, scope) = (&facts.recipe, &facts.scope);
    let found =
        crate::roles::role_default(sources, &project.root, recipe, role, key, templar, scope)?;
    Ok(found.and_then(|value| value.as_str().map(str::to_owned)))
}
