//! `modprobe` (`community.general.modprobe`): with `persistent: present`, the module is listed in
//! `/etc/modules-load.d/` and its options in `/etc/modprobe.d/`. Loading is skipped with a note:
//! an image build must never load a module into the build host's kernel.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Text};

crate::choices!(
    /// Loaded or not (in an image build: a note, nothing loads).
    ModprobeState { Present => "present", Absent => "absent" }
);

crate::choices!(
    /// Whether the node loads it at boot.
    Persistence { Present => "present", Absent => "absent", Disabled => "disabled" }
);

/// Parameters of `modprobe`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModprobeParams {
    /// The kernel module.
    pub name: Text,
    /// Load or unload (never done in an image build).
    pub state: Option<Choice<ModprobeState>>,
    /// Module options, written to `/etc/modprobe.d/<name>.conf` when persistent.
    pub params: Option<Text>,
    /// Load at boot: `present` writes `/etc/modules-load.d/<name>.conf`, `absent` removes it.
    pub persistent: Option<Choice<Persistence>>,
}

impl Params for ModprobeParams {}

/// `modprobe`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "modprobe",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<ModprobeParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
