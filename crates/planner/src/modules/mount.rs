//! `mount` (`ansible.posix.mount`): only the `/etc/fstab` states. `present` and `absent` edit the
//! image's fstab; `mounted`, `unmounted`, `remounted` and `ephemeral` act on a running host and
//! are refused with what to use instead.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Choices, Flag, Text};

crate::choices!(
    /// The fstab states (others refused).
    MountState { Present => "present", Absent => "absent", Mounted => "mounted", Unmounted => "unmounted", Remounted => "remounted", Ephemeral => "ephemeral" }
);

/// Parameters of `mount`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MountParams {
    /// The mount point.
    #[serde(alias = "name")]
    pub path: Text,
    /// The device, `host:/export`, `LABEL=`, `UUID=`.
    pub src: Option<Text>,
    /// The filesystem type.
    pub fstype: Option<Text>,
    /// Mount options (default `defaults`).
    pub opts: Option<Text>,
    /// fstab's dump field (default 0).
    pub dump: Option<Text>,
    /// fstab's pass field (default 0).
    pub passno: Option<Text>,
    /// `present` or `absent` in an image build.
    pub state: Choice<MountState>,
    /// The fstab file (default `/etc/fstab`).
    pub fstab: Option<Text>,
    /// Accepted.
    pub backup: Option<Flag>,
    /// Accepted.
    pub boot: Option<Flag>,
}

impl Params for MountParams {
    fn check(&self) -> Result<(), String> {
        match &self.state {
            Choice::Known(MountState::Present) => {
                if self.src.is_none() || self.fstype.is_none() {
                    return Err("mount state=present needs src and fstype".into());
                }
                Ok(())
            }
            Choice::Known(MountState::Absent) | Choice::Deferred(_) => Ok(()),
            Choice::Known(other) => Err(format!(
                "state={} mounts on a running host; an image build only writes /etc/fstab: use state=present (the node mounts it at boot)",
                other.as_str()
            )),
        }
    }
}

/// `mount`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "mount",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<MountParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
