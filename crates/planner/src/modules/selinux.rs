//! `selinux` (`ansible.posix.selinux`): the image's SELinux mode and policy in its
//! `/etc/selinux/config`. Nothing runs SELinux while an image is built, so the running state is
//! never changed: the node takes the configured state when it boots.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text};

crate::choices!(
    /// The SELinux mode.
    SelinuxState {
        Enforcing => "enforcing",
        Permissive => "permissive",
        Disabled => "disabled",
    }
);

/// Parameters of `selinux`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SelinuxParams {
    /// enforcing, permissive or disabled.
    pub state: Choice<SelinuxState>,
    /// The policy (`targeted`); needed unless disabled.
    pub policy: Option<Text>,
    /// The config file (default `/etc/selinux/config`).
    #[serde(alias = "conf", alias = "file")]
    pub configfile: Option<Text>,
    /// Set `selinux=0` on the kernels' command lines with grubby, or take it off.
    pub update_kernel_param: Option<Flag>,
}

impl Params for SelinuxParams {}

/// `selinux`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "selinux",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<SelinuxParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
