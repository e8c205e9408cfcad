//! `sysctl` (`ansible.posix.sysctl`): a kernel parameter written to a sysctl.d file of the image.
//! It is never applied: the build host's kernel is not the image's.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text};

crate::choices!(
    /// Whether the setting is in the file.
    SysctlState { Present => "present", Absent => "absent" }
);

/// Parameters of `sysctl`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SysctlParams {
    /// The key (`vm.zone_reclaim_mode`).
    #[serde(alias = "key")]
    pub name: Text,
    /// The value.
    #[serde(alias = "val")]
    pub value: Option<Text>,
    /// Present or absent.
    pub state: Option<Choice<SysctlState>>,
    /// The file (default `/etc/sysctl.d/99-imgbuild.conf`: systemd-sysctl applies it at boot).
    pub sysctl_file: Option<Text>,
    /// Accepted; an image build never reloads the host's settings.
    pub reload: Option<Flag>,
    /// Accepted; an image build never sets the host's kernel.
    pub sysctl_set: Option<Flag>,
    /// Accepted.
    pub ignoreerrors: Option<Flag>,
}

impl Params for SysctlParams {
    fn check(&self) -> Result<(), String> {
        let absent = matches!(self.state, Some(Choice::Known(SysctlState::Absent)));
        if !absent && self.value.is_none() {
            return Err("sysctl needs value unless state=absent".into());
        }
        Ok(())
    }
}

/// `sysctl`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "sysctl",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<SysctlParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
