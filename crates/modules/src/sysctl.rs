//! `sysctl` (`ansible.posix.sysctl`): a kernel parameter written to a sysctl.d file of the image.
//! It is never applied: the build host's kernel is not the image's.
//!
//! `name = value` in a sysctl.d file the node reads at boot; never applied to the
//! build host.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::hostconf::{ensure_parent, set_line, text};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text};
use serde_json::Value as Json;
use std::path::Path;

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

// How it runs in the rootfs.

/// `sysctl`: `name = value` in the sysctl file; never applied to the build host.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: SysctlParams = params(SPEC.name, args)?;
    let name = text(&p.name).trim().to_owned();
    let file = p
        .sysctl_file
        .as_ref()
        .map_or("/etc/sysctl.d/99-imgbuild.conf", text);
    let matches = |l: &str| {
        l.split('#')
            .next()
            .unwrap_or("")
            .split('=')
            .next()
            .map(str::trim)
            == Some(name.as_str())
            && l.contains('=')
    };
    let absent = matches!(p.state, Some(Choice::Known(SysctlState::Absent)));
    let line = p
        .value
        .as_ref()
        .map(|v| format!("{name} = {}", text(v).trim()));
    ensure_parent(ctx, Path::new(file))?;
    let mut result = set_line(
        ctx,
        Path::new(file),
        matches,
        if absent { None } else { line.as_deref() },
    )?;
    result.msg = Some(format!(
        "written to {file}; not applied (the build host's kernel is not the image's: systemd-sysctl applies it at boot)"
    ));
    Ok(result)
}
