//! `kernel_blacklist` (`community.general.kernel_blacklist`): a `blacklist <module>` line in a
//! modprobe.d file of the image.
//!
//! `blacklist <module>` in a modprobe.d file.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::hostconf::{ensure_parent, set_line, text, words};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Text};
use serde_json::Value as Json;
use std::path::Path;

crate::choices!(
    /// Blacklisted or not.
    BlacklistState { Present => "present", Absent => "absent" }
);

/// Parameters of `kernel_blacklist`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KernelBlacklistParams {
    /// The kernel module.
    pub name: Text,
    /// Present or absent.
    pub state: Option<Choice<BlacklistState>>,
    /// The file (default `/etc/modprobe.d/blacklist.conf`).
    pub blacklist_file: Option<Text>,
}

impl Params for KernelBlacklistParams {}

/// `kernel_blacklist`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "kernel_blacklist",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<KernelBlacklistParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `kernel_blacklist`: `blacklist <module>` in a modprobe.d file.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: KernelBlacklistParams = params(SPEC.name, args)?;
    let name = text(&p.name).trim().to_owned();
    let file = p
        .blacklist_file
        .as_ref()
        .map_or("/etc/modprobe.d/blacklist.conf", text);
    let line = format!("blacklist {name}");
    let absent = matches!(p.state, Some(Choice::Known(BlacklistState::Absent)));
    ensure_parent(ctx, Path::new(file))?;
    set_line(
        ctx,
        Path::new(file),
        |l| words(l) == ["blacklist", name.as_str()],
        (!absent).then_some(line.as_str()),
    )
}
