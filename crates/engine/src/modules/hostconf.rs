//! Host settings as an image carries them: files the node reads at boot. `sysctl` (sysctl.d),
//! `modprobe` (modules-load.d, modprobe.d), `kernel_blacklist`, `pam_limits` (limits.conf),
//! `timezone` (/etc/localtime), `mount` (/etc/fstab). None of them touches the build host: a
//! setting is never applied and a module is never loaded (the result says so).

use std::path::Path;

use planner::modules::kernel_blacklist::{BlacklistState, KernelBlacklistParams};
use planner::modules::modprobe::{ModprobeParams, ModprobeState, Persistence};
use planner::modules::mount::{MountParams, MountState};
use planner::modules::sysctl::{SysctlParams, SysctlState};
use planner::modules::timezone::TimezoneParams;
use planner::modules::types::{Choice, Text};
use serde_json::Value as Json;

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::attrs::FileAttrs;
use super::copy::{place, Placement};
use super::lineinfile::{read_lines, write_lines};

/// Sets the line `matches` finds to `line` (appending it when none does), or removes every
/// matching line when `line` is `None`. Creates the file (and nothing else) when missing.
pub fn set_line(
    ctx: &ModuleCtx,
    path: &Path,
    matches: impl Fn(&str) -> bool,
    line: Option<&str>,
) -> Result<ModuleResult, ModuleError> {
    let (mut lines, before) = read_lines(ctx, path)?.unwrap_or_default();
    match line {
        Some(line) => match lines.iter().position(|l| matches(l)) {
            Some(i) => {
                lines[i] = line.to_owned();
                let mut i = i + 1;
                while i < lines.len() {
                    if matches(&lines[i]) {
                        lines.remove(i);
                    } else {
                        i += 1;
                    }
                }
            }
            None => lines.push(line.to_owned()),
        },
        None => lines.retain(|l| !matches(l)),
    }
    if line.is_none() && before.is_empty() && lines.is_empty() {
        return Ok(ModuleResult::changed(false));
    }
    write_lines(ctx, path, &before, &lines, &FileAttrs::NONE)
}

fn text(t: &Text) -> &str {
    t.as_str()
}

/// The first word of a config line, ignoring comments.
fn words(line: &str) -> Vec<&str> {
    let line = line.split('#').next().unwrap_or("");
    line.split_whitespace().collect()
}

/// `sysctl`: `name = value` in the sysctl file; never applied to the build host.
pub fn sysctl(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: SysctlParams = params("sysctl", args)?;
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

fn ensure_parent(ctx: &ModuleCtx, path: &Path) -> Result<(), ModuleError> {
    if let Some(parent) = path.parent() {
        if !ctx.check {
            ctx.target.fs().mkdir_all(parent, 0o755)?;
        }
    }
    Ok(())
}

/// Writes `content` to `path` (or removes it when `None`), reporting the change.
fn whole_file(ctx: &ModuleCtx, path: &Path, content: Option<&str>) -> Result<bool, ModuleError> {
    match content {
        Some(content) => {
            ensure_parent(ctx, path)?;
            let how = Placement {
                bytes: content.as_bytes(),
                mode: &None,
                owner: &None,
                group: &None,
                force: true,
                validate: None,
                backup: false,
            };
            Ok(place(ctx, path, &how)?.changed)
        }
        None => {
            let fs = ctx.target.fs();
            let there = fs.exists(path)?;
            if there && !ctx.check {
                fs.remove_all(path)?;
            }
            Ok(there)
        }
    }
}

/// `modprobe`: boot-time loading and options; loading now is skipped with a note.
pub fn modprobe(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: ModprobeParams = params("modprobe", args)?;
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

/// `kernel_blacklist`: `blacklist <module>` in a modprobe.d file.
pub fn kernel_blacklist(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: KernelBlacklistParams = params("kernel_blacklist", args)?;
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

/// `timezone`: `/etc/localtime` links to the zone, `/etc/timezone` names it where it exists.
pub fn timezone(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: TimezoneParams = params("timezone", args)?;
    let name = p.name.as_ref().map(text).unwrap_or("UTC").trim().to_owned();
    if name.split('/').any(|c| c == ".." || c.is_empty()) {
        return Err(ModuleError::new(format!(
            "'{name}' is not a time zone name"
        )));
    }
    let fs = ctx.target.fs();
    let zone = format!("/usr/share/zoneinfo/{name}");
    if !fs.exists(Path::new(&zone))? {
        return Err(ModuleError::new(format!(
            "{zone} is not in the image; install tzdata first, or check the zone's name"
        )));
    }
    let localtime = Path::new("/etc/localtime");
    let current = match fs.meta(localtime)? {
        Some(_) => fs.read_link(localtime).ok(),
        None => None,
    };
    let mut changed = false;
    if current.as_deref() != Some(zone.as_str()) {
        changed = true;
        if !ctx.check {
            fs.remove_all(localtime)?;
            fs.symlink(&zone, localtime)?;
        }
    }
    if fs.exists(Path::new("/etc/timezone"))? {
        changed |= whole_file(ctx, Path::new("/etc/timezone"), Some(&format!("{name}\n")))?;
    }
    Ok(ModuleResult::changed(changed).with("name", name))
}

/// `mount`: an `/etc/fstab` entry (present or absent); nothing is mounted.
pub fn mount(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: MountParams = params("mount", args)?;
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
