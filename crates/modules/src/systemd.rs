//! `systemd`: enable, disable or mask units offline, by writing the `.wants` links.
//!
//! Enable, disable and mask units offline, the way
//! `systemctl enable` does: by reading the unit's `[Install]` section and writing the
//! `.wants`/`.requires` and alias links under `/etc/systemd/system`. No daemon is asked
//! anything.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text};
use crate::rootfs::{Kind, RootFs};
use crate::target::Cmd;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};

crate::choices!(
    /// Runtime states; an image build refuses them (no daemon runs in a rootfs).
    ServiceState { Started => "started", Stopped => "stopped", Restarted => "restarted", Reloaded => "reloaded" }
);

crate::choices!(
    /// Unit scope.
    SystemdScope { System => "system", User => "user", Global => "global" }
);

/// Parameters of `systemd`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SystemdParams {
    /// Unit name (`.service` may be left out).
    #[serde(alias = "service", alias = "unit")]
    pub name: Option<Text>,
    /// Enable at boot.
    pub enabled: Option<Flag>,
    /// Mask the unit.
    pub masked: Option<Flag>,
    /// Runtime state (refused in an image build).
    pub state: Option<Choice<ServiceState>>,
    /// Reload unit files (a no-op offline).
    #[serde(alias = "daemon-reload")]
    pub daemon_reload: Option<Flag>,
    /// Re-execute systemd (a no-op offline).
    #[serde(alias = "daemon-reexec")]
    pub daemon_reexec: Option<Flag>,
    /// System, user or global units.
    pub scope: Option<Choice<SystemdScope>>,
    /// Do not wait for the job.
    pub no_block: Option<Flag>,
    /// Replace existing links.
    pub force: Option<Flag>,
}

impl Params for SystemdParams {
    fn check(&self) -> Result<(), String> {
        let acts = self.enabled.is_some() || self.masked.is_some() || self.state.is_some();
        if self.name.is_none() && acts {
            return Err("enabled, masked and state need name".into());
        }
        if self.name.is_none() && self.daemon_reload.is_none() && self.daemon_reexec.is_none() {
            return Err("systemd needs name (or daemon_reload)".into());
        }
        Ok(())
    }
}

/// `systemd`, also `systemd_service`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "systemd",
    aliases: &["systemd_service"],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<SystemdParams>,
    plan_time: PlanTime::ManagesServices,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

const UNIT_DIRS: &[&str] = &[
    "/etc/systemd/system",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
];
const ETC: &str = "/etc/systemd/system";

/// A unit's `[Install]` section.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Install {
    /// `WantedBy=`.
    pub wanted_by: Vec<String>,
    /// `RequiredBy=`.
    pub required_by: Vec<String>,
    /// `Alias=`.
    pub alias: Vec<String>,
    /// `Also=`.
    pub also: Vec<String>,
}

/// Parses the `[Install]` section of a unit file.
pub fn parse_install(text: &str) -> Install {
    let mut install = Install::default();
    let mut in_install = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_install = line == "[Install]";
            continue;
        }
        if !in_install || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let list = match key.trim() {
            "WantedBy" => &mut install.wanted_by,
            "RequiredBy" => &mut install.required_by,
            "Alias" => &mut install.alias,
            "Also" => &mut install.also,
            _ => continue,
        };
        list.extend(value.split_whitespace().map(str::to_owned));
    }
    install
}

fn unit_name(name: &str) -> String {
    const SUFFIXES: &[&str] = &[
        ".service",
        ".socket",
        ".target",
        ".timer",
        ".mount",
        ".path",
        ".slice",
        ".automount",
        ".swap",
    ];
    if SUFFIXES.iter().any(|s| name.ends_with(s)) {
        name.to_owned()
    } else {
        format!("{name}.service")
    }
}

/// The template unit of an instance name: `demo@blue.service` → `demo@.service`.
fn template_of(unit: &str) -> Option<String> {
    let (prefix, rest) = unit.split_once('@')?;
    let (instance, suffix) = rest.rsplit_once('.')?;
    (!instance.is_empty()).then(|| format!("{prefix}@.{suffix}"))
}

/// The unit folders the image's own systemd searches, in its order, as `systemd-analyze
/// unit-paths` in the image prints them: Debian 12's looks in `/lib/systemd/system` before
/// `/usr/lib/systemd/system`, so `systemctl enable` there links `/lib/...` (the runtime folders
/// under `/run` are left out). The usual folders where the image cannot say.
pub(super) fn unit_dirs(ctx: &ModuleCtx) -> Vec<String> {
    let asked = ctx
        .target
        .run(&Cmd::new(&["systemd-analyze", "unit-paths"]));
    if let Some(out) = asked.ok().filter(|out| out.rc == 0) {
        let dirs: Vec<String> = out
            .stdout
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with('/') && !l.starts_with("/run/"))
            .filter(|l| !l.ends_with(".control") && !l.ends_with(".attached"))
            .map(str::to_owned)
            .collect();
        if dirs.first().is_some_and(|d| d == ETC) {
            return dirs;
        }
    }
    UNIT_DIRS.iter().map(|d| (*d).to_owned()).collect()
}

/// Where the unit file is, searched as systemd does; aliases in /etc are followed.
fn find_unit(fs: &RootFs, dirs: &[String], unit: &str) -> Result<Option<PathBuf>, ModuleError> {
    for dir in dirs {
        let path = Path::new(dir).join(unit);
        match fs.meta(&path)? {
            Some(m) if m.kind == Kind::File => return Ok(Some(path)),
            Some(m) if m.kind == Kind::Symlink && dir != ETC => return Ok(Some(path)),
            _ => {}
        }
    }
    Ok(None)
}

/// Every link under /etc/systemd/system that enables `unit` (in `.wants`/`.requires` folders).
fn enabling_links(fs: &RootFs, unit: &str) -> Result<Vec<PathBuf>, ModuleError> {
    let mut links = Vec::new();
    if !fs.exists(Path::new(ETC))? {
        return Ok(links);
    }
    for dir in fs.list(Path::new(ETC))? {
        if dir.ends_with(".wants") || dir.ends_with(".requires") {
            let link = Path::new(ETC).join(&dir).join(unit);
            if fs.meta(&link)?.is_some_and(|m| m.kind == Kind::Symlink) {
                links.push(link);
            }
        }
    }
    Ok(links)
}

fn ensure_link(fs: &RootFs, link: &Path, target: &str, check: bool) -> Result<bool, ModuleError> {
    if fs.meta(link)?.is_some_and(|m| m.kind == Kind::Symlink) && fs.read_link(link)? == target {
        return Ok(false);
    }
    if !check {
        if let Some(parent) = link.parent() {
            fs.mkdir_all(parent, 0o755)?;
        }
        fs.symlink(target, link)?;
    }
    Ok(true)
}

/// Enables or disables `name` (following an alias to its unit, an instance to its template,
/// and `Also=` units) by its links under /etc; whether a link changed.
pub(super) fn set_enabled(
    fs: &RootFs,
    dirs: &[String],
    name: &str,
    enabled: bool,
    check: bool,
    seen: &mut Vec<String>,
) -> Result<bool, ModuleError> {
    let unit = unit_name(name);
    if seen.contains(&unit) {
        return Ok(false);
    }
    seen.push(unit.clone());
    // An alias that a package enabled (`chronyd.service` -> chrony.service in /etc) names
    // the unit it links to, as systemctl follows it.
    let alias = Path::new(ETC).join(&unit);
    if fs.meta(&alias)?.is_some_and(|m| m.kind == Kind::Symlink) {
        let target = fs.read_link(&alias)?;
        let real = Path::new(&target)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        if let Some(real) = real.filter(|r| *r != unit && target != "/dev/null") {
            return set_enabled(fs, dirs, &real, enabled, check, seen);
        }
    }
    // An instance (`getty@tty2.service`) is enabled from its template (`getty@.service`).
    let path = match find_unit(fs, dirs, &unit)? {
        Some(path) => Some(path),
        None => match template_of(&unit) {
            Some(template) => find_unit(fs, dirs, &template)?,
            None => None,
        },
    };
    let Some(path) = path else {
        if !enabled {
            // Nothing to disable when the unit is not installed at all.
            return Ok(false);
        }
        return Err(ModuleError::new(format!(
            "unit {unit} is not installed in the image (looked in {})",
            dirs.join(", ")
        )));
    };
    let install = parse_install(&fs.read_text_opt(&path)?.unwrap_or_default());
    let mut changed = if enabled {
        enable_links(fs, &unit, &path.display().to_string(), &install, check)?
    } else {
        disable_links(fs, &unit, &install, check)?
    };
    for also in &install.also {
        changed |= set_enabled(fs, dirs, also, enabled, check, seen)?;
    }
    Ok(changed)
}

/// Makes the links `systemctl enable` makes for `unit` (installed at `target`): its
/// `WantedBy=`, `RequiredBy=` and `Alias=`; whether one was missing.
fn enable_links(
    fs: &RootFs,
    unit: &str,
    target: &str,
    install: &Install,
    check: bool,
) -> Result<bool, ModuleError> {
    let mut changed = false;
    for wanted in &install.wanted_by {
        changed |= ensure_link(
            fs,
            &Path::new(ETC).join(format!("{wanted}.wants")).join(unit),
            target,
            check,
        )?;
    }
    for required in &install.required_by {
        changed |= ensure_link(
            fs,
            &Path::new(ETC)
                .join(format!("{required}.requires"))
                .join(unit),
            target,
            check,
        )?;
    }
    for alias in &install.alias {
        changed |= ensure_link(fs, &Path::new(ETC).join(alias), target, check)?;
    }
    Ok(changed)
}

/// Removes the links that enable `unit` and its `Alias=` links, as `systemctl disable` does;
/// whether there was one.
fn disable_links(
    fs: &RootFs,
    unit: &str,
    install: &Install,
    check: bool,
) -> Result<bool, ModuleError> {
    let mut changed = false;
    let mut links = enabling_links(fs, unit)?;
    links.extend(
        install
            .alias
            .iter()
            .map(|a| Path::new(ETC).join(a))
            .filter(|p| {
                fs.meta(p)
                    .ok()
                    .flatten()
                    .is_some_and(|m| m.kind == Kind::Symlink)
            }),
    );
    for link in links {
        changed = true;
        if !check {
            fs.remove_all(&link)?;
            remove_if_empty(fs, link.parent())?;
        }
    }
    Ok(changed)
}

/// Removes a `.wants`/`.requires` folder that the last link left, as systemctl disable does.
fn remove_if_empty(fs: &RootFs, dir: Option<&Path>) -> Result<(), ModuleError> {
    let Some(dir) = dir.filter(|d| *d != Path::new(ETC)) else {
        return Ok(());
    };
    if fs.list(dir)?.is_empty() {
        fs.remove_all(dir)?;
    }
    Ok(())
}

fn set_masked(fs: &RootFs, name: &str, masked: bool, check: bool) -> Result<bool, ModuleError> {
    let link = Path::new(ETC).join(unit_name(name));
    let is_masked = fs.meta(&link)?.is_some_and(|m| m.kind == Kind::Symlink)
        && fs.read_link(&link)? == "/dev/null";
    if masked == is_masked {
        return Ok(false);
    }
    if fs.meta(&link)?.is_some_and(|m| m.kind == Kind::File) {
        // A unit file of its own in /etc cannot be masked: systemctl leaves it (and Ansible
        // still reports the mask as a change); unmasking it has nothing to remove.
        return Ok(masked);
    }
    if !check {
        if masked {
            fs.mkdir_all(Path::new(ETC), 0o755)?;
            fs.symlink("/dev/null", &link)?;
        } else {
            fs.remove_all(&link)?;
        }
    }
    Ok(true)
}

/// What `systemctl show` reports of `name` on the node before anything runs: its unit file found
/// (or not), masked or enabled, and nothing active, since nothing runs while an image is built.
/// A status query (`systemd: name: x`, nothing else) gets it, as Ansible's module on a host does.
fn offline_status(fs: &RootFs, dirs: &[String], name: &str) -> Result<Json, ModuleError> {
    let unit = unit_name(name);
    let masked = fs
        .read_link(&Path::new(ETC).join(&unit))
        .is_ok_and(|target| target == "/dev/null");
    let path = find_unit(fs, dirs, &unit)?;
    let installable = match &path {
        Some(path) => fs
            .read_text_opt(path)?
            .map(|text| parse_install(&text))
            .is_some_and(|i| !(i.wanted_by.is_empty() && i.required_by.is_empty() && i.alias.is_empty() && i.also.is_empty())),
        None => false,
    };
    let (load, file_state) = match (masked, &path) {
        (true, _) => ("masked", "masked"),
        (false, None) => ("not-found", ""),
        (false, Some(_)) if !enabling_links(fs, &unit)?.is_empty() => ("loaded", "enabled"),
        (false, Some(_)) if installable => ("loaded", "disabled"),
        (false, Some(_)) => ("loaded", "static"),
    };
    Ok(serde_json::json!({
        "Id": unit,
        "Names": unit,
        "LoadState": load,
        "ActiveState": "inactive",
        "SubState": "dead",
        "UnitFileState": file_state,
        "FragmentPath": path.map(|p| p.display().to_string()).unwrap_or_default(),
    }))
}

/// `state:` in an image build: nothing runs while an image is built, so nothing is started,
/// stopped or restarted, and nothing changes, as Ansible's systemd module does in a chroot
/// (it warns and leaves the state alone); the unit must exist, as there. `enabled:` decides
/// what the node starts when it boots.
pub(super) fn state_in_image<S: crate::types::Choices>(
    ctx: &ModuleCtx,
    name: &str,
    state: &Option<Choice<S>>,
) -> Result<Option<ModuleResult>, ModuleError> {
    let state = match state {
        None => return Ok(None),
        Some(Choice::Known(s)) => s.as_str(),
        Some(Choice::Deferred(t)) => {
            return Err(ModuleError::new(format!("state '{t}' was not resolved")))
        }
    };
    let fs = ctx.target.fs();
    let unit = unit_name(name);
    let dirs = unit_dirs(ctx);
    let found = find_unit(fs, &dirs, &unit)?.is_some()
        || match template_of(&unit) {
            Some(template) => find_unit(fs, &dirs, &template)?.is_some(),
            None => false,
        }
        || fs.exists(&Path::new("/etc/init.d").join(name))?;
    if !found {
        return Err(ModuleError::new(format!(
            "Could not find the requested service {name}: host (no unit {unit} in {}, no /etc/init.d/{name}); install its package first",
            dirs.join(", ")
        )));
    }
    Ok(Some(ModuleResult {
        msg: Some(format!(
            "state: {state} has no effect in an image build: nothing runs while it is built (enabled: decides what starts when the node boots)"
        )),
        ..ModuleResult::default()
    }
    .with("state", state)))
}

/// `systemd`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: SystemdParams = params(SPEC.name, args)?;
    run_params(&p, ctx)
}

/// `systemd` with its parameters read (also what `service` runs, as Ansible's `service`
/// action runs the `systemd` module where systemd is the service manager).
pub(super) fn run_params(p: &SystemdParams, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let fs = ctx.target.fs();
    let Some(name) = &p.name else {
        return Ok(ModuleResult {
            msg: Some("daemon_reload has nothing to do in an image build".into()),
            ..ModuleResult::default()
        });
    };
    let mut changed = false;
    if let Some(masked) = &p.masked {
        changed |= set_masked(fs, name.as_str(), masked.or(false), ctx.check)?;
    }
    if let Some(enabled) = &p.enabled {
        changed |= set_enabled(
            fs,
            &unit_dirs(ctx),
            name.as_str(),
            enabled.or(false),
            ctx.check,
            &mut Vec::new(),
        )?;
    }
    let mut result = state_in_image(ctx, name.as_str(), &p.state)?.unwrap_or_default();
    result.changed = changed;
    let status = offline_status(fs, &unit_dirs(ctx), name.as_str())?;
    result = result.with("name", name.to_string()).with("status", status);
    if let Some(enabled) = &p.enabled {
        result = result.with("enabled", enabled.or(false));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usual() -> Vec<String> {
        UNIT_DIRS.iter().map(|d| (*d).to_owned()).collect()
    }

    #[test]
    fn links_name_the_unit_where_the_images_systemd_finds_it_first() {
        // Debian 12: /lib is usr/lib, and systemd searches /lib/systemd/system first.
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("usr/lib/systemd/system")).expect("mkdir");
        std::os::unix::fs::symlink("usr/lib", root.join("lib")).expect("lib");
        std::fs::write(
            root.join("usr/lib/systemd/system/chrony.service"),
            "[Install]\nWantedBy=multi-user.target\n",
        )
        .expect("unit");
        std::fs::create_dir_all(dir.path().join("scratch")).expect("scratch");
        let fs = RootFs::new(&root, &dir.path().join("scratch")).expect("fs");
        let debian: Vec<String> = [
            ETC,
            "/usr/local/lib/systemd/system",
            "/lib/systemd/system",
            "/usr/lib/systemd/system",
        ]
        .map(str::to_owned)
        .to_vec();
        assert!(set_enabled(&fs, &debian, "chrony", true, false, &mut Vec::new()).expect("enable"));
        let link = fs
            .read_link(Path::new(
                "/etc/systemd/system/multi-user.target.wants/chrony.service",
            ))
            .expect("link");
        assert_eq!(link, "/lib/systemd/system/chrony.service");
    }

    #[test]
    fn a_status_query_reports_the_unit_as_systemctl_show_would_before_boot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        let units = root.join("usr/lib/systemd/system");
        std::fs::create_dir_all(&units).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("scratch")).expect("mkdir");
        std::fs::write(units.join("a.service"), "[Install]\nWantedBy=multi-user.target\n").expect("a");
        std::fs::write(units.join("b.service"), "[Service]\nExecStart=/bin/true\n").expect("b");
        let fs = RootFs::new(&root, &dir.path().join("scratch")).expect("fs");
        let status = |name: &str| offline_status(&fs, &usual(), name).expect("status");
        assert_eq!(status("a")["UnitFileState"], "disabled");
        assert!(set_enabled(&fs, &usual(), "a", true, false, &mut Vec::new()).expect("enable"));
        let a = status("a.service");
        assert_eq!(
            (&a["LoadState"], &a["ActiveState"], &a["UnitFileState"]),
            (&Json::from("loaded"), &Json::from("inactive"), &Json::from("enabled"))
        );
        assert_eq!(status("b")["UnitFileState"], "static");
        assert_eq!(status("firewalld")["LoadState"], "not-found");
        assert!(set_masked(&fs, "b", true, false).expect("mask"));
        assert_eq!(status("b")["LoadState"], "masked");
    }

    #[test]
    fn install_section() {
        let text = "[Unit]\nWantedBy=nope\n[Install]\nWantedBy=multi-user.target graphical.target\nAlias=ib.service\n# Also=x\nRequiredBy=a.target\n";
        let install = parse_install(text);
        assert_eq!(
            install.wanted_by,
            vec!["multi-user.target", "graphical.target"]
        );
        assert_eq!(install.alias, vec!["ib.service"]);
        assert_eq!(install.required_by, vec!["a.target"]);
        assert!(install.also.is_empty());
    }

    #[test]
    fn enable_disable_mask_offline() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("usr/lib/systemd/system")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("scratch")).expect("mkdir");
        std::fs::write(root.join("usr/lib/systemd/system/openibd.service"), "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\nAlias=ib.service\n").expect("unit");
        let fs = RootFs::new(&root, &dir.path().join("scratch")).expect("fs");
        assert!(
            set_enabled(&fs, &usual(), "openibd", true, false, &mut Vec::new()).expect("enable")
        );
        assert_eq!(
            std::fs::read_link(
                root.join("etc/systemd/system/multi-user.target.wants/openibd.service")
            )
            .expect("link"),
            Path::new("/usr/lib/systemd/system/openibd.service")
        );
        assert!(root.join("etc/systemd/system/ib.service").is_symlink());
        assert!(
            !set_enabled(&fs, &usual(), "openibd", true, false, &mut Vec::new()).expect("again"),
            "second enable changes nothing"
        );
        assert!(set_enabled(
            &fs,
            &usual(),
            "openibd.service",
            false,
            false,
            &mut Vec::new()
        )
        .expect("disable"));
        assert!(!root
            .join("etc/systemd/system/multi-user.target.wants/openibd.service")
            .exists());
        assert!(
            !set_enabled(&fs, &usual(), "opensmd", false, false, &mut Vec::new())
                .expect("disable a missing unit")
        );
        assert!(set_enabled(&fs, &usual(), "opensmd", true, false, &mut Vec::new()).is_err());
        assert!(set_masked(&fs, "x", true, false).expect("mask"));
        assert_eq!(
            std::fs::read_link(root.join("etc/systemd/system/x.service")).expect("mask link"),
            Path::new("/dev/null")
        );
    }
}
