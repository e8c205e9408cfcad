//! What a build made: the report of each layer and of the image.

use std::path::PathBuf;

/// One layer of a build.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerReport {
    /// The role (or `base`).
    pub role: String,
    /// Compressed digest.
    pub digest: String,
    /// Compressed size.
    pub size: u64,
    /// Uncompressed size (of its tar).
    pub unpacked: u64,
    /// Uncompressed digest.
    pub diff_id: String,
    /// Reused from the cache.
    pub cached: bool,
    /// Taken from the registry cache (`--cache-from`): not built here.
    pub from_registry: bool,
    /// Seconds this build spent on it.
    pub seconds: f64,
    /// Why it was rebuilt.
    pub why: Vec<String>,
    /// When the layer was built (seconds since 1970; 0 when unknown), and how long that took:
    /// for a cached layer, its first build.
    pub built_at: u64,
    /// Seconds its build took.
    pub built_seconds: f64,
    /// What each task of the role cost when the layer was built (empty for the base and for
    /// layers from a registry).
    pub costs: Vec<engine::costs::TaskCost>,
    /// What the role's compiles found in the compile cache when the layer was built.
    pub compiles: engine::compile_cache::CompileStats,
    /// The inputs the role's layer is keyed by (none for the base's layers).
    pub inputs: Option<crate::cache::Inputs>,
}

/// What a build made.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildReport {
    /// The image.
    pub image: String,
    /// Manifest digest (the image's identity).
    pub manifest: String,
    /// Config digest.
    pub config: String,
    /// The layers, bottom first.
    pub layers: Vec<LayerReport>,
    /// The outputs written.
    pub outputs: Vec<PathBuf>,
    /// Seconds the build took.
    pub seconds: f64,
    /// Seconds of it after the last role ran: the blobs still being written, the image,
    /// verify and the outputs.
    pub after_roles: f64,
    /// What verify found, when it ran.
    pub verify: Option<verify::Report>,
    /// What the build-only packages step removed, when the recipe names any.
    pub build_only: Option<BuildOnlyRemoval>,
}

/// What the build-only packages step removed (`build_only_packages`), read back from its
/// registered result, which a cached layer keeps.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BuildOnlyRemoval {
    /// The packages removed, named ones and what only they pulled in.
    pub removed: Vec<String>,
    /// The image's apparent size before the step (what a node would have held in RAM).
    pub bytes_before: u64,
    /// And after it.
    pub bytes_after: u64,
    /// The kernel modules no package owns (DKMS's, an installer's): all still in the image.
    pub modules_kept: Vec<String>,
    /// Those of them a removal script deleted, which the step put back.
    #[serde(default)]
    pub modules_restored: Vec<String>,
}

impl BuildOnlyRemoval {
    /// The step's result among the build's registered variables.
    pub(super) fn from_registered(registered: &serde_json::Value) -> Option<BuildOnlyRemoval> {
        let value = registered.get(planner::build_only::REGISTER)?;
        serde_json::from_value(value.clone()).ok()
    }
}
