//! `mount`: an `/etc/fstab` entry; nothing is mounted in the build.

use std::path::Path;

use planner::modules::mount::{MountParams, MountState};
use planner::modules::types::{Choice, Text};
use serde_json::Value as Json;

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::hostconf::{set_line, text, words};

/// `mount`: an `/etc/fstab` entry (present or absent); nothing is mounted.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: MountParams = params(planner::modules::mount::SPEC.name, args)?;
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
