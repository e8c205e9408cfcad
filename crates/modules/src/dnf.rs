//! `dnf` (and `yum`): Rocky and RHEL packages in the rootfs.
//!
//! `dnf`, `yum` and `package` on dnf: one transaction of the image's own `dnf`, chosen and
//! reported as ansible-core 2.14's `dnf` module chooses and reports it (`results` of
//! `Installed: <nevra>` and `Removed: <nevra>`, `rc`, `msg`, `failures`), the packages it
//! changed read from the image's rpm database before and after.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, PackageFamily, Params, PlanTime};
use super::types::PackageState;
use super::types::{Choice, Flag, Int, Text, TextList};
use crate::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use crate::package_cmd::{failed, run as run_command};
use crate::target::CmdOutput;
use serde_json::{json, Value as Json};
use std::collections::BTreeSet;
use std::path::Path;

/// Parameters of `dnf` and `yum`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DnfParams {
    /// Package names, `name-version`, `@group`, local paths or URLs of `.rpm` files.
    #[serde(alias = "pkg")]
    pub name: Option<TextList>,
    /// Present, latest or absent.
    pub state: Option<Choice<PackageState>>,
    /// List packages instead of installing (`installed`, `available`, a name).
    pub list: Option<Text>,
    /// Repositories to enable for this transaction.
    pub enablerepo: Option<TextList>,
    /// Repositories to disable for this transaction.
    pub disablerepo: Option<TextList>,
    /// Packages to exclude.
    pub exclude: Option<TextList>,
    /// Skip GPG checks.
    pub disable_gpg_check: Option<Flag>,
    /// Let a named older version replace a newer one installed.
    pub allow_downgrade: Option<Flag>,
    /// Refresh metadata first.
    #[serde(alias = "expire-cache")]
    pub update_cache: Option<Flag>,
    /// Install weak dependencies (default yes).
    pub install_weak_deps: Option<Flag>,
    /// Allow erasing packages to resolve dependencies.
    pub allowerasing: Option<Flag>,
    /// Do not insist on the best candidate.
    pub nobest: Option<Flag>,
    /// Skip packages with broken dependencies.
    pub skip_broken: Option<Flag>,
    /// Remove unneeded dependencies.
    pub autoremove: Option<Flag>,
    /// Only update installed packages.
    pub update_only: Option<Flag>,
    /// Use only the cache.
    pub cacheonly: Option<Flag>,
    /// Only download.
    pub download_only: Option<Flag>,
    /// Download directory.
    pub download_dir: Option<Text>,
    /// Only security updates.
    pub security: Option<Flag>,
    /// Only bugfix updates.
    pub bugfix: Option<Flag>,
    /// An alternative dnf.conf.
    pub conf_file: Option<Text>,
    /// Install root (the rootfs is already the root: only `/` is accepted).
    pub installroot: Option<Text>,
    /// `$releasever`.
    pub releasever: Option<Text>,
    /// Plugins to disable.
    pub disable_plugin: Option<TextList>,
    /// Plugins to enable.
    pub enable_plugin: Option<TextList>,
    /// Exclude packages from repositories (`all`, `main`, `repoid`).
    pub disable_excludes: Option<Text>,
    /// Verify TLS certificates.
    pub validate_certs: Option<Flag>,
    /// Verify TLS for repositories.
    pub sslverify: Option<Flag>,
    /// Seconds to wait for the rpm lock.
    pub lock_timeout: Option<Int>,
    /// Backend (`auto`, `dnf4`, `dnf5`, `yum`).
    pub use_backend: Option<Text>,
}

impl Params for DnfParams {
    fn check(&self) -> Result<(), String> {
        let autoremove = self.autoremove.is_some();
        if self.name.is_none() && self.list.is_none() && self.update_cache.is_none() && !autoremove
        {
            return Err("dnf needs name (or list, update_cache or autoremove)".into());
        }
        Ok(())
    }
}

/// `dnf` and its alias `yum`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "dnf",
    aliases: &["yum", "dnf5"],
    free_form: FreeForm::KeyValue,
    url_params: &["name"],
    normalize: super::spec::normalize_with::<DnfParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::PackageNames,
    family: Some(PackageFamily::Dnf),
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

mod list;
mod streams;
mod table;

/// Where package files from URLs are put in the image while dnf installs them.
const DOWNLOADS: &str = "/tmp/.imgbuild-rpm";

/// The module checks the signatures of package files given by path or URL too.
pub(super) const LOCAL_GPGCHECK: &str = "--setopt=localpkg_gpgcheck=True";

/// How rpm names a package as dnf prints it: `name-[epoch:]version-release.arch`.
const NEVRA: &str = "%{NAME}-%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}.%{ARCH}\\n";

/// What one dnf task asks for.
pub(super) struct Request {
    /// Names, `name-version`, `@group`, paths or URLs of `.rpm` files.
    pub names: Vec<String>,
    /// Present, latest or absent.
    pub state: PackageState,
    /// dnf's options for the transaction (repositories, excludes, GPG, ...).
    pub options: Vec<String>,
    /// Take a candidate that is not the newest when the newest cannot be installed.
    pub nobest: bool,
    /// Remove what nothing requires any more (alone with absent: `dnf autoremove`).
    pub autoremove: bool,
    /// Only upgrade what is installed.
    pub update_only: bool,
    /// Only download (`Downloaded: ` results).
    pub download_only: bool,
}

/// The installed packages, as dnf prints them (without `gpg-pubkey`, rpm's imported keys).
fn installed(ctx: &ModuleCtx) -> Result<BTreeSet<String>, ModuleError> {
    let out = run_command(
        ctx,
        vec!["rpm".into(), "-qa".into(), "--qf".into(), NEVRA.into()],
        &[],
    )?;
    if out.rc != 0 {
        return Err(failed("rpm -qa", &out));
    }
    Ok(out
        .stdout
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("gpg-pubkey-"))
        .map(str::to_owned)
        .collect())
}

/// Whether rpm has `spec` (a name, `name-version` or `name-version-release`) installed.
fn is_installed(ctx: &ModuleCtx, spec: &str) -> Result<bool, ModuleError> {
    let out = run_command(ctx, vec!["rpm".into(), "-q".into(), spec.into()], &[])?;
    Ok(out.rc == 0)
}

/// Package files named by URL, downloaded through the mirror and put in the image; the
/// paths dnf installs from.
fn fetch_files(ctx: &ModuleCtx, files: &[String]) -> Result<Vec<String>, ModuleError> {
    let mut paths = Vec::new();
    for name in files {
        if !(name.starts_with("http://") || name.starts_with("https://")) {
            paths.push(name.clone());
            continue;
        }
        let cached = ctx.downloads.fetch(name, None)?;
        let file = name.rsplit('/').next().unwrap_or("package.rpm");
        let inside = format!("{DOWNLOADS}/{file}");
        ctx.target.fs().mkdir_all(Path::new(DOWNLOADS), 0o755)?;
        ctx.target
            .fs()
            .copy_in(&cached, Path::new(&inside), Some(0o644))?;
        paths.push(inside);
    }
    Ok(paths)
}

/// The specs dnf found nothing for (`No match for argument`, all filtered out by excludes),
/// as Ansible's module lists them in `failures`.
fn marking_failures(out: &CmdOutput) -> Vec<(String, String)> {
    let said = format!("{}\n{}", out.stdout, out.stderr);
    let mut failures = Vec::new();
    for line in said.lines() {
        if let Some(spec) = line.strip_prefix("No match for argument: ") {
            let spec = spec.trim().to_owned();
            failures.push((format!("No package {spec} available."), spec));
        } else if let Some((_, spec)) = line.split_once(" for argument: ") {
            failures.push((
                format!("{} {}", spec.trim(), line.trim()),
                spec.trim().to_owned(),
            ));
        }
    }
    failures
}

/// The package whose signature dnf could not check, and why, if that is why it failed
/// (`Failed to validate GPG signature for <nevra>: <why>`, as the module words it).
fn gpg_failure(out: &CmdOutput) -> Option<ModuleError> {
    let said = format!("{}\n{}", out.stdout, out.stderr);
    if !said.contains("Error: GPG check FAILED") {
        return None;
    }
    let line = said.lines().find(|l| l.starts_with("Public key for "))?;
    let file = line
        .strip_prefix("Public key for ")?
        .split_whitespace()
        .next()?;
    let nevra = file.strip_suffix(".rpm").unwrap_or(file);
    Some(ModuleError::new(format!(
        "Failed to validate GPG signature for {nevra}: {}",
        line.trim()
    )))
}

/// Whether dnf's command line refused before it resolved anything because no key is
/// imported and an enabled repository checks signatures without naming a key (a check of
/// dnf's command line that Ansible's module, which drives dnf's API, does not make).
fn cli_key_refusal(out: &CmdOutput) -> bool {
    let said = format!("{}\n{}", out.stdout, out.stderr);
    said.contains("However, you do not have any GPG public keys installed")
        && said.contains("Problem repository:")
}

/// The depsolver's problem dnf printed, if that is why it failed.
fn depsolve_problem(out: &CmdOutput) -> Option<String> {
    let at = out.stderr.find("Error: \n Problem")?;
    Some(out.stderr[at + "Error: ".len()..].trim_end().to_owned())
}

/// What dnf's failure says, as Ansible's module words it: the specs it found nothing for, and
/// the depsolver's problem with the rest (Ansible's module resolves what it could mark, so a
/// problem there is its message even beside specs it found nothing for).
fn failure(
    ctx: &ModuleCtx,
    argv: &[String],
    specs: &[String],
    out: &CmdOutput,
) -> Result<ModuleError, ModuleError> {
    if let Some(error) = gpg_failure(out) {
        return Ok(error);
    }
    let mut failures = marking_failures(out);
    if out.stderr.contains("There are no enabled repositories") {
        // The module finds no package in no repository: each name is a failure.
        failures.extend(
            specs
                .iter()
                .filter(|s| !s.starts_with('/'))
                .map(|s| (format!("No package {s} available."), s.clone())),
        );
    }
    let mut problem = depsolve_problem(out);
    if !failures.is_empty() && problem.is_none() {
        // dnf stopped at the names it could not find: ask it about the others.
        let found: Vec<String> = argv
            .iter()
            .filter(|a| !failures.iter().any(|(_, spec)| spec == *a))
            .cloned()
            .collect();
        if found.len() > 2 && found.last().is_some_and(|a| !a.starts_with('-')) {
            let mut dry = found;
            dry.insert(1, "--assumeno".into());
            problem = depsolve_problem(&run_command(ctx, dry, &[])?);
        }
    }
    let mut error = match (problem, failures.is_empty()) {
        (Some(problem), _) => ModuleError::new(format!("Depsolve Error occurred: {problem}")),
        (None, false) => ModuleError::new("Failed to install some of the specified packages"),
        (None, true) => return Ok(failed("dnf", out)),
    };
    let failures: Vec<String> = failures.into_iter().map(|(f, _)| f).collect();
    error.fields.insert("failures".into(), json!(failures));
    error.fields.insert("rc".into(), json!(1));
    error.fields.insert("results".into(), json!([]));
    error.fields.insert("changed".into(), json!(false));
    Ok(error)
}

/// The specs the transaction takes: for present, those not installed; for latest, all (dnf's
/// `install` upgrades what is installed); for absent, those installed. With update_only, only
/// what is installed (to upgrade), and a result line for each of the others.
fn todo(
    ctx: &ModuleCtx,
    req: &Request,
    specs: &[String],
    results: &mut Vec<String>,
) -> Result<Vec<String>, ModuleError> {
    let mut todo = Vec::new();
    if upgrade_all(req) {
        return Ok(todo);
    }
    for spec in specs {
        let wildcard = spec.contains(['*', '?', '[']);
        let take = match req.state {
            PackageState::Absent => wildcard || is_installed(ctx, spec)?,
            _ if req.update_only => {
                let there = is_installed(ctx, spec)?;
                if !there {
                    results.push(format!(
                        "Packages providing {spec} not installed due to update_only specified"
                    ));
                }
                there
            }
            PackageState::Latest => true,
            PackageState::Present => wildcard || !is_installed(ctx, spec)?,
        };
        if take {
            todo.push(spec.clone());
        }
    }
    Ok(todo)
}

/// The result lines of the `@` specs, as the module words them before its transaction: a
/// group installed, a stream installed that was not enabled, or removed that was.
fn at_results(
    ctx: &ModuleCtx,
    req: &Request,
    at: &streams::AtSpecs,
) -> Result<Vec<String>, ModuleError> {
    let removing = matches!(req.state, PackageState::Absent);
    let mut results = Vec::new();
    for module in &at.modules {
        match (
            removing,
            streams::stream_enabled(ctx, &req.options, module)?,
        ) {
            (false, false) => results.push(format!("Module {module} installed.")),
            (true, true) => results.push(format!("Module {module} removed.")),
            _ => {}
        }
    }
    if !removing {
        // Groups say so; environments do not.
        results.extend(at.groups.iter().map(|id| format!("Group {id} installed.")));
    }
    Ok(results)
}

/// `name: '*'` with latest: the module upgrades every installed package (`dnf upgrade`).
fn upgrade_all(req: &Request) -> bool {
    matches!(req.state, PackageState::Latest)
        && matches!(req.names.as_slice(), [only] if only.trim() == "*")
}

/// A result of nothing to do (with the lines for package files given).
fn nothing(results: Vec<String>) -> ModuleResult {
    ModuleResult {
        msg: Some("Nothing to do".into()),
        ..ModuleResult::changed(false)
    }
    .with("rc", 0)
    .with("results", results)
}

/// dnf's command line for the request: options, verb, `args`.
fn command_line(ctx: &ModuleCtx, req: &Request, args: &[String]) -> Vec<String> {
    let mut argv: Vec<String> = vec!["dnf".into(), "-y".into()];
    if ctx.check {
        argv.push("--assumeno".into());
    }
    argv.extend(req.options.iter().cloned());
    match req.state {
        _ if upgrade_all(req) => argv.push("upgrade".into()),
        PackageState::Absent if args.is_empty() => argv.push("autoremove".into()),
        PackageState::Absent => argv.push("remove".into()),
        PackageState::Present if !req.update_only => argv.push("install".into()),
        PackageState::Present | PackageState::Latest => {
            argv.push("install".into());
            argv.push(if req.nobest { "--nobest" } else { "--best" }.into());
        }
    }
    argv.extend(args.iter().cloned());
    argv
}

/// Runs the request as one dnf transaction and reports it as Ansible's module does.
pub(super) fn run_request(ctx: &ModuleCtx, req: &Request) -> Result<ModuleResult, ModuleError> {
    let (files, specs): (Vec<String>, Vec<String>) = req
        .names
        .iter()
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .partition(|n| n.ends_with(".rpm"));
    if matches!(req.state, PackageState::Absent) && !files.is_empty() {
        return Err(ModuleError {
            msg: "Cannot remove paths -- please specify package name.".into(),
            fields: [("results".to_owned(), json!([]))].into_iter().collect(),
        });
    }
    let (at_specs, specs): (Vec<String>, Vec<String>) =
        specs.into_iter().partition(|s| s.starts_with('@'));
    let at = streams::classify(ctx, &req.options, &at_specs)?;
    let paths = fetch_files(ctx, &files)?;
    let mut results: Vec<String> = paths.iter().map(|p| format!("Installed {p}")).collect();
    results.extend(at_results(ctx, req, &at)?);
    let mut args = at.args();
    args.extend(todo(ctx, req, &specs, &mut results)?);
    args.extend(paths);
    let autoremove = req.autoremove && matches!(req.state, PackageState::Absent);
    if args.is_empty() && !autoremove && !upgrade_all(req) {
        return Ok(nothing(results));
    }
    let before = installed(ctx)?;
    let mut argv = command_line(ctx, req, &args);
    let mut out = run_command(ctx, argv.clone(), &[])?;
    if out.rc != 0 && cli_key_refusal(&out) {
        // Repositories that set gpgcheck themselves still check; what the CLI's main
        // setting adds is the refusal.
        argv.insert(2, "--setopt=gpgcheck=False".into());
        out = run_command(ctx, argv.clone(), &[])?;
    }
    let _ = ctx.target.fs().remove_all(Path::new(DOWNLOADS));
    let said = format!("{}\n{}", out.stdout, out.stderr);
    let aborted = ctx.check && said.contains("Operation aborted");
    if out.rc != 0 && !aborted && !said.contains("Nothing to do") {
        return Err(failure(ctx, &argv, &args, &out)?);
    }
    if matches!(req.state, PackageState::Absent) {
        streams::reset(ctx, &req.options, &at.modules)?;
    }
    let (installs, removals) = if ctx.check || req.download_only {
        let planned = table::read(&out.stdout, &before);
        (planned.installed, planned.removed)
    } else {
        let after = installed(ctx)?;
        let installs = after.difference(&before).cloned().collect();
        (installs, before.difference(&after).cloned().collect())
    };
    if installs.is_empty() && removals.is_empty() {
        return Ok(nothing(results));
    }
    let verb = if req.download_only {
        "Downloaded"
    } else {
        "Installed"
    };
    results.extend(installs.iter().map(|p| format!("{verb}: {p}")));
    results.extend(removals.iter().map(|p| format!("Removed: {p}")));
    let msg = if ctx.check {
        "Check mode: No changes made, but would have if not in check mode"
    } else {
        ""
    };
    Ok(ModuleResult {
        msg: Some(msg.into()),
        ..ModuleResult::changed(true)
    }
    .with("rc", 0)
    .with("results", results))
}

/// dnf's command-line options for what the task's parameters ask.
fn options(p: &DnfParams) -> Vec<String> {
    let mut options = Vec::new();
    if flag(&p.disable_gpg_check, false) {
        options.push("--nogpgcheck".into());
    } else {
        options.push(LOCAL_GPGCHECK.into());
    }
    if let Some(weak) = &p.install_weak_deps {
        let weak = if weak.or(true) { "True" } else { "False" };
        options.push(format!("--setopt=install_weak_deps={weak}"));
    }
    for (set, option) in [
        (&p.allowerasing, "--allowerasing"),
        (&p.skip_broken, "--skip-broken"),
    ] {
        if flag(set, false) {
            options.push(option.into());
        }
    }
    let lists = [
        (&p.disablerepo, "--disablerepo"),
        (&p.enablerepo, "--enablerepo"),
        (&p.exclude, "--exclude"),
    ];
    for (list, option) in lists {
        if let Some(TextList(items)) = list {
            options.extend(items.iter().map(|i| format!("{option}={i}")));
        }
    }
    if let Some(what) = &p.disable_excludes {
        options.push(format!("--disableexcludes={what}"));
    }
    // The module removes what a removal leaves unneeded only with autoremove.
    let clean = if flag(&p.autoremove, false) {
        "True"
    } else {
        "False"
    };
    options.push(format!("--setopt=clean_requirements_on_remove={clean}"));
    if let Some(release) = &p.releasever {
        options.push(format!("--releasever={release}"));
    }
    options.extend(flag_options(p));
    options
}

/// The options that map one to one onto dnf's command line.
fn flag_options(p: &DnfParams) -> Vec<String> {
    let mut options = Vec::new();
    for (set, option) in [
        (&p.security, "--security"),
        (&p.bugfix, "--bugfix"),
        (&p.cacheonly, "--cacheonly"),
        (&p.download_only, "--downloadonly"),
    ] {
        if flag(set, false) {
            options.push(option.to_owned());
        }
    }
    let texts = [
        (&p.conf_file, "--config"),
        (&p.download_dir, "--downloaddir"),
    ];
    for (text, option) in texts {
        if let Some(text) = text {
            options.push(format!("{option}={text}"));
        }
    }
    let lists = [
        (&p.disable_plugin, "--disableplugin"),
        (&p.enable_plugin, "--enableplugin"),
    ];
    for (list, option) in lists {
        if let Some(TextList(items)) = list {
            options.extend(items.iter().map(|i| format!("{option}={i}")));
        }
    }
    if !flag(&p.sslverify, true) || !flag(&p.validate_certs, true) {
        options.push("--setopt=sslverify=False".into());
    }
    options
}

/// `dnf` and `yum`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: DnfParams = params(SPEC.name, args)?;
    let state = match &p.state {
        Some(Choice::Known(s)) => Some(*s),
        Some(Choice::Deferred(t)) => {
            return Err(ModuleError::new(format!("state '{t}' was not resolved")))
        }
        None => None,
    };
    let autoremove = flag(&p.autoremove, false);
    let state = match (state, autoremove) {
        // As the module: autoremove without a state removes.
        (None, true) => PackageState::Absent,
        (state, _) => state.unwrap_or(PackageState::Present),
    };
    let options = options(&p);
    let names = p.name.map(|TextList(n)| n).unwrap_or_default();
    if let Some(root) = p.installroot.as_ref().filter(|r| r.as_str().trim() != "/") {
        return Err(ModuleError::new(format!(
            "installroot '{root}' is not supported in an image build: the task runs in the \
             image's root already"
        )));
    }
    if let Some(what) = &p.list {
        return list::list(ctx, what.as_str().trim(), &options);
    }
    if flag(&p.update_cache, false) && !ctx.check {
        let mut argv = vec!["dnf".to_owned(), "-y".into()];
        argv.extend(options.iter().cloned());
        argv.push("makecache".into());
        let out = run_command(ctx, argv, &[])?;
        if out.rc != 0 {
            return Err(failed("dnf makecache", &out));
        }
        if names.is_empty() {
            return Ok(ModuleResult {
                msg: Some("Cache updated".into()),
                ..ModuleResult::changed(false)
            }
            .with("rc", 0)
            .with("results", json!([])));
        }
    }
    run_request(
        ctx,
        &Request {
            names,
            state,
            options,
            nobest: flag(&p.nobest, false),
            autoremove,
            update_only: flag(&p.update_only, false),
            download_only: flag(&p.download_only, false),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(stdout: &str, stderr: &str) -> CmdOutput {
        CmdOutput {
            rc: 1,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn dnf_failures_read_in_the_modules_words() {
        let said = out(
            "No match for argument: el-nope\nAll matches were filtered out by exclude filtering for argument: el-app\n",
            "Error: Unable to find a match: el-nope el-app\n",
        );
        let failures: Vec<String> = marking_failures(&said).into_iter().map(|f| f.0).collect();
        assert_eq!(
            failures,
            [
                "No package el-nope available.",
                "el-app All matches were filtered out by exclude filtering for argument: el-app"
            ]
        );
        let problem = out(
            "(try to add '--allowerasing')\n",
            "Error: \n Problem: conflicting requests\n  - nothing provides el-base\n",
        );
        assert_eq!(
            depsolve_problem(&problem).as_deref(),
            Some("\n Problem: conflicting requests\n  - nothing provides el-base")
        );
        let gpg = out(
            "Public key for el-base-1.0-1.noarch.rpm is not installed\n",
            "Error: GPG check FAILED\n",
        );
        assert_eq!(
            gpg_failure(&gpg).map(|e| e.msg).as_deref(),
            Some("Failed to validate GPG signature for el-base-1.0-1.noarch: Public key for el-base-1.0-1.noarch.rpm is not installed")
        );
        assert!(gpg_failure(&problem).is_none());
    }
}
