//! `mount` (`ansible.posix.mount`): the `/etc/fstab` states. `present` and `absent` edit the
//! image's fstab; a task that mounts, unmounts or remounts (`mounted`, `unmounted`,
//! `remounted`, `ephemeral`) runs Ansible's own module, which does that inside the build's
//! sandbox, a private mount namespace the mount cannot leave ([`left_to_ansible`]); without
//! Ansible on the machine such a task is refused with what to use instead.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::hostconf::{set_line, text, words};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Choices, Flag, Text};
use serde_json::Value as Json;
use std::path::Path;

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
                "state={} mounts, which Ansible's own mount module (ansible.posix) does in the build's sandbox, and no ansible-core with ansible.posix is on this machine: install it, or use state=present (the node mounts it at boot)",
                other.as_str()
            )),
        }
    }
}

/// Whether a task of imgbuild's `module` with these arguments is left to Ansible's own
/// module: `mount` that mounts, unmounts or remounts (imgbuild's only edits fstab), which
/// Ansible's module does inside the build's sandbox, its private mount namespace, as it does
/// in a chroot.
pub fn left_to_ansible(module: &str, args: &Json) -> bool {
    module == SPEC.name
        && matches!(
            args.get("state").and_then(Json::as_str),
            Some("mounted" | "unmounted" | "remounted" | "ephemeral")
        )
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

// How it runs in the rootfs.

/// `mount`: an `/etc/fstab` entry (present or absent); nothing is mounted.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: MountParams = params(SPEC.name, args)?;
    let fstab = p.fstab.as_ref().map_or("/etc/fstab", text);
    let path = text(&p.path).trim().to_owned();
    let matches = |l: &str| words(l).get(1) == Some(&path.as_str());
    match &p.state {
        Choice::Known(MountState::Absent) => set_line(ctx, Path::new(fstab), matches, None),
        Choice::Known(MountState::Present) => {
            let field = |v: &Option<Text>, default: &str| {
                v.as_ref()
                    .map(|t| t.as_str().trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| default.to_owned())
            };
            let (src, fstype) = (field(&p.src, ""), field(&p.fstype, ""));
            let (opts, dump, passno) = (
                field(&p.opts, "defaults"),
                field(&p.dump, "0"),
                field(&p.passno, "0"),
            );
            // Fields separated by one space, as ansible.posix.mount writes a new entry.
            let line = format!("{src} {path} {fstype} {opts} {dump} {passno}");
            let wanted: Vec<&str> = line.split(' ').collect();
            let existing = ctx.target.fs().read_text_opt(Path::new(fstab))?;
            let mut result = if existing.is_some_and(|t| t.lines().any(|l| words(l) == wanted)) {
                // The same fields, however spaced: no change, as Ansible compares fields.
                ModuleResult::changed(false)
            } else {
                set_line(ctx, Path::new(fstab), matches, Some(&line))?
            };
            result.msg = Some(format!(
                "{path} is in {fstab}; nothing was mounted (the node mounts it at boot)"
            ));
            Ok(result
                .with("name", path.as_str())
                .with("src", src)
                .with("fstype", fstype)
                .with("opts", opts)
                .with("dump", dump)
                .with("passno", passno)
                .with("fstab", fstab))
        }
        _ => Err(ModuleError::new(
            "mount in an image build only writes /etc/fstab: state must be present or absent",
        )),
    }
}
