//! `modprobe` (`community.general.modprobe`): with `persistent: present`, the module is listed in
//! `/etc/modules-load.d/` and its options in `/etc/modprobe.d/`. Loading is skipped with a note:
//! an image build must never load a module into the build host's kernel.
//!
//! A module loaded at boot (modules-load.d) and its options (modprobe.d); nothing
//! is loaded now.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::hostconf::{text, whole_file};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Text};
use serde_json::Value as Json;
use std::path::Path;

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

// How it runs in the rootfs.

/// `modprobe`: boot-time loading and options; loading now is skipped with a note.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: ModprobeParams = params(SPEC.name, args)?;
    let name = text(&p.name).trim();
    let load = Path::new("/etc/modules-load.d").join(format!("{name}.conf"));
    let options = Path::new("/etc/modprobe.d").join(format!("{name}.conf"));
    let mut changed = false;
    match &p.persistent {
        Some(Choice::Known(Persistence::Present)) => {
            changed |= whole_file(ctx, &load, Some(&format!("{name}\n")))?;
            let opts = p.params.as_ref().map(text).unwrap_or("").trim();
            if !opts.is_empty() {
                changed |= whole_file(ctx, &options, Some(&format!("options {name} {opts}\n")))?;
            }
        }
        Some(Choice::Known(Persistence::Absent)) => {
            changed |= whole_file(ctx, &load, None)?;
            changed |= whole_file(ctx, &options, None)?;
        }
        _ => {}
    }
    let verb = match &p.state {
        Some(Choice::Known(ModprobeState::Absent)) => "unloading",
        _ => "loading",
    };
    Ok(ModuleResult {
        changed,
        msg: Some(format!(
            "{verb} {name} skipped: an image build never loads a module into the build host's kernel{}",
            if matches!(p.persistent, Some(Choice::Known(Persistence::Present))) {
                " (the node loads it at boot from /etc/modules-load.d)"
            } else {
                ""
            }
        )),
        ..ModuleResult::default()
    })
}
