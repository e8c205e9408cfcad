//! The build-only packages step (`planner::build_only`): removes what only the build needed
//! (compiler, kernel headers, DKMS) with the image's own apt, once it is sure nothing the node
//! keeps depends on it, and keeps the kernel modules those tools built: a module that no
//! package owns (DKMS's, a vendor installer's) is put back if a removal script deleted it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value as Json;

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::package_cmd::{self, APT_ENV};
use crate::rootfs::{Kind, RootFs};

/// The step's module name in the plan (not a module a role can name).
pub const MODULE: &str = "imgbuild_remove_build_only";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    /// Package names or shell patterns.
    patterns: Vec<String>,
}

/// An installed package, as `dpkg-query` lists it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Package {
    name: String,
    essential: bool,
}

/// Runs the step.
pub fn remove(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: Params = params(MODULE, args)?;
    let before = installed(ctx)?;
    let named = select(&p.patterns, &before)?;
    let fs = ctx.target.fs();
    if ctx.check {
        return Ok(ModuleResult::changed(true).with("removed", named));
    }
    // A held package (the pinned kernel's headers) makes apt's resolver refuse the removal
    // even with --allow-change-held-packages; a failed step's changes are dropped with it.
    let mut unhold = vec!["apt-mark".to_owned(), "unhold".into()];
    unhold.extend(named.iter().cloned());
    run_ok(ctx, unhold, "apt-mark unhold of the build-only packages")?;
    let orphans_before = orphans(ctx)?;
    let pulled_in: Vec<String> = check_nothing_else_goes(ctx, &named)?
        .into_iter()
        .filter(|p| !orphans_before.contains(p))
        .collect();
    check_no_runtime_files(fs, &pulled_in)?;
    let bytes_before = tree_bytes(ctx)?;
    if named.iter().any(|n| n == "dkms") {
        forget_dkms_installs(fs)?;
    }
    let keep = tempfile::tempdir()
        .map_err(|e| ModuleError::new(format!("a folder for the kept modules: {e}")))?;
    let kept = set_modules_aside(fs, keep.path())?;
    let mut purge = vec![
        "apt-get".to_owned(),
        "purge".into(),
        "-y".into(),
        "-q".into(),
    ];
    purge.extend(named.iter().cloned());
    run_ok(ctx, purge, "apt-get purge of the build-only packages")?;
    if !pulled_in.is_empty() {
        let mut purge = ["apt-get", "purge", "-y", "-q"].map(String::from).to_vec();
        purge.extend(pulled_in);
        run_ok(
            ctx,
            purge,
            "apt-get purge of what only the build-only packages pulled in",
        )?;
    }
    let restored = restore_modules(fs, &kept)?;
    // apt's binary caches, which the removal rewrote (40 MB): apt makes them again when it
    // runs, and a node does not run it.
    for cache in ["pkgcache.bin", "srcpkgcache.bin"] {
        fs.remove_all(&Path::new("/var/cache/apt").join(cache))?;
    }
    let modules_kept: Vec<String> = kept.iter().map(|m| m.path.display().to_string()).collect();
    for kernel in kernels_of(&restored) {
        run_ok(
            ctx,
            vec!["depmod".into(), "-a".into(), kernel.clone()],
            &format!("depmod for {kernel}"),
        )?;
    }
    let after: BTreeSet<String> = installed(ctx)?.into_iter().map(|p| p.name).collect();
    let removed: Vec<String> = before
        .into_iter()
        .map(|p| p.name)
        .filter(|n| !after.contains(n))
        .collect();
    let bytes_after = tree_bytes(ctx)?;
    let msg = format!(
        "removed {} packages ({:.1} MB); the {} modules no package owns stay ({} put back)",
        removed.len(),
        bytes_before.saturating_sub(bytes_after) as f64 / 1e6,
        modules_kept.len(),
        restored.len()
    );
    let mut result = ModuleResult::changed(true)
        .with("removed", removed)
        .with("bytes_before", bytes_before)
        .with("bytes_after", bytes_after)
        .with("modules_kept", modules_kept)
        .with("modules_restored", restored);
    result.msg = Some(msg);
    Ok(result)
}

/// Runs an apt or dpkg command in the image (as the package modules do); its output, or the
/// failure with the end of it.
fn run_ok(ctx: &ModuleCtx, argv: Vec<String>, what: &str) -> Result<String, ModuleError> {
    let out = package_cmd::run(ctx, argv, APT_ENV)?;
    if out.rc != 0 {
        return Err(package_cmd::failed(what, &out));
    }
    Ok(out.stdout)
}

/// The installed packages, sorted by name.
fn installed(ctx: &ModuleCtx) -> Result<Vec<Package>, ModuleError> {
    let out = run_ok(
        ctx,
        vec![
            "dpkg-query".into(),
            "-W".into(),
            "-f=${Package}\t${db:Status-Abbrev}\t${Essential}\n".into(),
        ],
        "listing the installed packages",
    )?;
    Ok(parse_installed(&out))
}

fn parse_installed(listing: &str) -> Vec<Package> {
    let mut packages: Vec<Package> = listing
        .lines()
        .filter_map(|line| {
            let mut parts = line.split('\t');
            let (name, status) = (parts.next()?, parts.next()?);
            // `ii`, or `hi` when held: the second letter is what is installed.
            (status.chars().nth(1) == Some('i')).then(|| Package {
                name: name.to_owned(),
                essential: parts.next() == Some("yes"),
            })
        })
        .collect();
    packages.sort();
    packages.dedup_by(|a, b| a.name == b.name);
    packages
}

/// The installed packages the patterns name; a pattern that names none, or an essential
/// package, is an error.
fn select(patterns: &[String], installed: &[Package]) -> Result<Vec<String>, ModuleError> {
    let mut named = BTreeSet::new();
    for pattern in patterns {
        let matched: Vec<&Package> = installed
            .iter()
            .filter(|p| ansible::glob::matches(pattern, &p.name))
            .collect();
        if matched.is_empty() {
            return Err(ModuleError::new(format!(
                "build_only_packages: {pattern:?} matches no installed package; check the name (`dpkg-query -W` in the image lists what is installed) or take it out of the list"
            )));
        }
        if let Some(essential) = matched.iter().find(|p| p.essential) {
            return Err(ModuleError::new(format!(
                "build_only_packages: {pattern:?} names {}, which dpkg marks essential: every Debian system needs it, so it cannot be removed; take it out of the list",
                essential.name
            )));
        }
        named.extend(matched.iter().map(|p| p.name.clone()));
    }
    Ok(named.into_iter().collect())
}

/// Asks apt what the removal would take with it: anything beyond the named packages is a
/// package the node keeps that depends on them, and the step refuses rather than remove it.
/// Returns what apt would then call no longer required.
fn check_nothing_else_goes(
    ctx: &ModuleCtx,
    named: &[String],
) -> Result<BTreeSet<String>, ModuleError> {
    let mut argv = vec!["apt-get".to_owned(), "-s".into(), "purge".into()];
    argv.extend(named.iter().cloned());
    let out = package_cmd::run(ctx, argv, APT_ENV)?;
    if out.rc != 0 {
        // apt will not remove a protected package (apt itself) that depends on one named.
        let broken = unmet_dependents(&format!("{}\n{}", out.stdout, out.stderr));
        if broken.is_empty() {
            return Err(package_cmd::failed(
                "apt-get -s purge (what the removal would take)",
                &out,
            ));
        }
        return Err(ModuleError::new(format!(
            "removing the build-only packages would also remove {}, which depend on them and which apt keeps (an essential or protected package); take the package they need out of the list",
            broken.join(", ")
        )));
    }
    let out = out.stdout;
    let also: Vec<&str> = simulated_removals(&out)
        .into_iter()
        .filter(|p| !named.iter().any(|n| n == p))
        .collect();
    if also.is_empty() {
        return Ok(no_longer_required(&out));
    }
    Err(ModuleError::new(format!(
        "removing the build-only packages would also remove {}, which depend on them; if the node does not need those either, add them to build_only_packages, else take the package they need out of the list",
        also.join(", ")
    )))
}

/// The packages apt names as left with unmet dependencies (` apt : Depends: libapt-pkg6.0`).
fn unmet_dependents(output: &str) -> Vec<String> {
    let mut names: Vec<String> = output
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(" : ")?;
            (rest.starts_with("Depends:") || rest.starts_with("PreDepends:"))
                .then(|| name.trim().to_owned())
        })
        .collect();
    names.dedup();
    names
}

/// The packages apt says "are no longer required" after a (simulated) removal.
fn no_longer_required(output: &str) -> BTreeSet<String> {
    output
        .lines()
        .skip_while(|l| !l.contains("no longer required"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .flat_map(str::split_whitespace)
        .map(|name| name.split(':').next().unwrap_or(name).to_owned())
        .collect()
}

/// The packages an `apt-get -s` run lists as removed (`Purg name ...`, `Remv name ...`).
fn simulated_removals(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter_map(|l| l.strip_prefix("Purg ").or_else(|| l.strip_prefix("Remv ")))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(|name| name.split(':').next().unwrap_or(name))
        .collect()
}

/// The packages apt would autoremove now (installed as dependencies, needed by none).
fn orphans(ctx: &ModuleCtx) -> Result<BTreeSet<String>, ModuleError> {
    let out = run_ok(
        ctx,
        ["apt-get", "-s", "autoremove"].map(String::from).to_vec(),
        "apt-get -s autoremove (what nothing needs)",
    )?;
    Ok(simulated_removals(&out)
        .into_iter()
        .map(str::to_owned)
        .collect())
}

/// Where a package ships what the running kernel reads: firmware, module options, udev rules,
/// modules to load.
const RUNTIME_DIRS: &[&str] = &[
    "/lib/firmware/",
    "/lib/modprobe.d/",
    "/etc/modprobe.d/",
    "/lib/udev/rules.d/",
    "/lib/modules-load.d/",
    "/etc/modules-load.d/",
];

/// Refuses to let a package go unnamed when it was pulled in by a build-only package but ships
/// files the node's kernel reads (`firmware-nvidia-gsp` with `nvidia-kernel-dkms`): apt would
/// call it unneeded, and the node would lose its GPU firmware.
fn check_no_runtime_files(fs: &RootFs, pulled_in: &[String]) -> Result<(), ModuleError> {
    let mut needed = Vec::new();
    for package in pulled_in {
        let list = ["", ":amd64", ":all"]
            .iter()
            .map(|arch| PathBuf::from(format!("/var/lib/dpkg/info/{package}{arch}.list")))
            .find(|p| fs.exists(p).unwrap_or(false));
        let Some(list) = list else { continue };
        let text = String::from_utf8_lossy(&fs.read(&list)?).into_owned();
        let runtime = text
            .lines()
            .map(|l| l.strip_prefix("/usr").unwrap_or(l))
            .find(|l| {
                RUNTIME_DIRS
                    .iter()
                    .any(|d| l.starts_with(d) && l.len() > d.len())
            });
        if let Some(file) = runtime {
            needed.push(format!("{package} ({file})"));
        }
    }
    if needed.is_empty() {
        return Ok(());
    }
    Err(ModuleError::new(format!(
        "the build-only packages pulled in {}, which the node's kernel reads; install them by name in a role (apt then keeps them), or add them to build_only_packages if the node does without",
        needed.join(", ")
    )))
}

/// The image's apparent size in bytes (hard links once), as `du` counts it on the rootfs'
/// own filesystem.
fn tree_bytes(ctx: &ModuleCtx) -> Result<u64, ModuleError> {
    let out = run_ok(
        ctx,
        ["du", "-sxb", "/"].map(String::from).to_vec(),
        "measuring the image (du)",
    )?;
    out.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| ModuleError::new(format!("du printed {out:?}, not a size")))
}

/// DKMS goes with the build tools, and a DKMS package's removal script would uninstall the
/// modules it built. DKMS uninstalls only what its `kernel-<K>-<arch>` links say it installed:
/// removing the links leaves the modules where they are, untouched (put back, they would be
/// copied into the removal's layer).
fn forget_dkms_installs(fs: &RootFs) -> Result<(), ModuleError> {
    let dkms = Path::new("/var/lib/dkms");
    if !fs.exists(dkms)? {
        return Ok(());
    }
    for module in fs.list(dkms)? {
        let dir = dkms.join(&module);
        if fs.meta(&dir)?.map(|m| m.kind) != Some(Kind::Dir) {
            continue;
        }
        for name in fs.list(&dir)? {
            let link = dir.join(&name);
            if name.starts_with("kernel-") && fs.meta(&link)?.map(|m| m.kind) == Some(Kind::Symlink)
            {
                fs.remove_all(&link)?;
            }
        }
    }
    Ok(())
}

/// A module no package owns, copied out of the image while the packages go.
struct KeptModule {
    path: PathBuf,
    copy: PathBuf,
    meta: crate::rootfs::Meta,
}

/// Copies every kernel module file that no package owns into `keep` (on the host: reading the
/// image's files leaves its layer as it is, where a link or a move would copy them into it).
fn set_modules_aside(fs: &RootFs, keep: &Path) -> Result<Vec<KeptModule>, ModuleError> {
    let owned = owned_module_files(fs)?;
    let mut modules = Vec::new();
    let root = Path::new("/lib/modules");
    if fs.exists(root)? {
        module_files(fs, root, &mut modules)?;
    }
    let mut kept = Vec::new();
    for path in modules.into_iter().filter(|m| !owned.contains(m)) {
        let Some(meta) = fs.meta(&path)? else {
            continue;
        };
        let copy = keep.join(kept.len().to_string());
        let mut from = fs.open_read(&path)?;
        std::fs::File::create(&copy)
            .and_then(|mut to| std::io::copy(&mut from, &mut to))
            .map_err(|e| ModuleError::new(format!("keeping {}: {e}", path.display())))?;
        kept.push(KeptModule { path, copy, meta });
    }
    Ok(kept)
}

/// Puts back the kept modules a removal script deleted, as they were; returns their paths.
fn restore_modules(fs: &RootFs, kept: &[KeptModule]) -> Result<Vec<String>, ModuleError> {
    let mut restored = Vec::new();
    for module in kept {
        if fs.meta(&module.path)?.is_some() {
            continue;
        }
        if let Some(parent) = module.path.parent() {
            fs.mkdir_all(parent, 0o755)?;
        }
        fs.copy_in(&module.copy, &module.path, Some(module.meta.mode))?;
        fs.chown(&module.path, Some(module.meta.uid), Some(module.meta.gid))?;
        fs.set_times(&module.path, module.meta.mtime)?;
        restored.push(module.path.display().to_string());
    }
    Ok(restored)
}

/// The kernel folders (`/lib/modules/<K>`) the restored modules are in.
fn kernels_of(restored: &[String]) -> BTreeSet<String> {
    restored
        .iter()
        .filter_map(|p| p.strip_prefix("/lib/modules/")?.split('/').next())
        .map(str::to_owned)
        .collect()
}

fn is_module_file(name: &str) -> bool {
    [".ko", ".ko.xz", ".ko.zst", ".ko.gz"]
        .iter()
        .any(|ext| name.ends_with(ext))
}

fn module_files(fs: &RootFs, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), ModuleError> {
    for name in fs.list(dir)? {
        let path = dir.join(&name);
        match fs.meta(&path)?.map(|m| m.kind) {
            Some(Kind::Dir) => module_files(fs, &path, out)?,
            Some(Kind::File) if is_module_file(&name) => out.push(path),
            _ => {}
        }
    }
    Ok(())
}

/// The module files dpkg's file lists name (`/usr/lib/modules/...` read as `/lib/modules/...`).
fn owned_module_files(fs: &RootFs) -> Result<BTreeSet<PathBuf>, ModuleError> {
    let info = Path::new("/var/lib/dpkg/info");
    let mut owned = BTreeSet::new();
    for name in fs.list(info)? {
        if !name.ends_with(".list") {
            continue;
        }
        let text = String::from_utf8_lossy(&fs.read(&info.join(&name))?).into_owned();
        owned.extend(
            text.lines()
                .map(|l| l.strip_prefix("/usr").unwrap_or(l))
                .filter(|l| l.starts_with("/lib/modules/") && is_module_file(l))
                .map(PathBuf::from),
        );
    }
    Ok(owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packages(names: &[(&str, bool)]) -> Vec<Package> {
        names
            .iter()
            .map(|(n, e)| Package {
                name: (*n).to_owned(),
                essential: *e,
            })
            .collect()
    }

    #[test]
    fn dpkg_query_listing_keeps_installed_packages_only() {
        let listing =
            "gcc\tii \t\nold\trc \t\ncoreutils\tii \tyes\ngcc\tii \t\nheaders\thi \t\nnone\tun \t\n";
        assert_eq!(
            parse_installed(listing),
            packages(&[("coreutils", true), ("gcc", false), ("headers", false)])
        );
    }

    #[test]
    fn patterns_select_installed_packages_and_refuse_typos_and_essentials() {
        let installed = packages(&[
            ("coreutils", true),
            ("gcc", false),
            ("linux-headers-6.1.0-50-amd64", false),
            ("linux-headers-6.1.0-50-common", false),
            ("linux-image-6.1.0-50-amd64", false),
        ]);
        let named = select(&["gcc".into(), "linux-headers-*".into()], &installed).expect("ok");
        assert_eq!(
            named,
            [
                "gcc",
                "linux-headers-6.1.0-50-amd64",
                "linux-headers-6.1.0-50-common"
            ]
        );
        let typo = select(&["gcc-13".into()], &installed).expect_err("typo");
        assert!(typo.msg.contains("\"gcc-13\" matches no installed package"));
        let essential = select(&["core*".into()], &installed).expect_err("essential");
        assert!(essential
            .msg
            .contains("coreutils, which dpkg marks essential"));
    }

    #[test]
    fn apt_simulation_lists_what_goes() {
        let out = "Reading package lists...\nPurg nvidia-kernel-dkms [535.261.03-1]\nRemv gcc [4:12.2.0-3]\nPurg libfoo:amd64 [1]\nConf x\n";
        assert_eq!(
            simulated_removals(out),
            ["nvidia-kernel-dkms", "gcc", "libfoo"]
        );
    }

    #[test]
    fn apt_names_what_a_removal_leaves_unneeded() {
        let out = "Reading state information...\nThe following packages were automatically installed and are no longer required:\n  cpp cpp-12 firmware-nvidia-gsp\n  libisl23:amd64\nUse 'apt autoremove' to remove them.\nThe following packages will be REMOVED:\n  gcc*\n";
        assert_eq!(
            no_longer_required(out).into_iter().collect::<Vec<_>>(),
            ["cpp", "cpp-12", "firmware-nvidia-gsp", "libisl23"]
        );
        assert!(no_longer_required("Purg gcc [1]\n").is_empty());
    }

    #[test]
    fn apt_names_the_kept_packages_a_removal_would_break() {
        let out = "The following packages have unmet dependencies:\n apt : Depends: libapt-pkg6.0 (>= 2.6.1) but it is not going to be installed\n       Recommends: ca-certificates\nE: Error, pkgProblemResolver::Resolve generated breaks";
        assert_eq!(unmet_dependents(out), ["apt"]);
        assert!(unmet_dependents("Purg gcc [1]").is_empty());
    }

    #[test]
    fn restored_modules_name_their_kernels() {
        let restored = [
            "/lib/modules/6.1.0-50-amd64/updates/dkms/nvidia.ko".to_owned(),
            "/lib/modules/6.1.0-50-amd64/updates/dkms/nvidia-peermem.ko".to_owned(),
        ];
        assert_eq!(
            kernels_of(&restored).into_iter().collect::<Vec<_>>(),
            ["6.1.0-50-amd64"]
        );
        assert!(is_module_file("nvidia.ko.xz") && !is_module_file("modules.dep"));
    }
}
