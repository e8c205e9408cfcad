//! What `apt` and `package` (on apt) share, each in its own file: an apt request run through
//! the image's own apt-get, and dpkg's versions. dnf's is in `dnf.rs`.

use std::collections::HashMap;

use serde_json::json;

use super::api::{ModuleCtx, ModuleError, ModuleResult};
use super::package_cmd::{failed, run, APT_ENV};

crate::choices!(
    /// What `apt` does with the names.
    AptState { Present => "present" | "installed", Latest => "latest", Absent => "absent" | "removed", BuildDep => "build-dep", Fixed => "fixed" }
);

/// Package name without a `=version` pin.
fn bare(name: &str) -> &str {
    name.split('=').next().unwrap_or(name)
}

/// Installed packages with their versions, for the names asked about.
fn dpkg_versions(
    ctx: &ModuleCtx,
    names: &[String],
) -> Result<HashMap<String, String>, ModuleError> {
    let mut argv = vec![
        "dpkg-query".to_owned(),
        "-W".into(),
        "-f=${Package}\t${db:Status-Abbrev}\t${Version}\n".into(),
    ];
    argv.extend(names.iter().map(|n| bare(n).to_owned()));
    let out = run(ctx, argv, &[])?;
    Ok(out
        .stdout
        .lines()
        .filter_map(|line| {
            let mut parts = line.split('\t');
            let (name, status, version) = (parts.next()?, parts.next()?, parts.next()?);
            status.starts_with("ii").then(|| {
                (
                    name.split(':').next().unwrap_or(name).to_owned(),
                    version.to_owned(),
                )
            })
        })
        .collect())
}

/// The installed packages `names` name: a name as it is when installed, and a name with
/// `*`, `?` or `[` (Ansible's apt expands it as `fnmatch`) as each installed package it
/// matches.
fn installed_matches(names: &[String], before: &HashMap<String, String>) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for name in names.iter().map(|n| bare(n)) {
        let matched: Vec<&String> = if name.contains(['*', '?', '[']) {
            let mut matched: Vec<&String> = before
                .keys()
                .filter(|installed| ansible::glob::matches(name, installed))
                .collect();
            matched.sort();
            matched
        } else {
            before
                .get_key_value(name)
                .map(|(k, _)| k)
                .into_iter()
                .collect()
        };
        for package in matched {
            if !found.contains(package) {
                found.push(package.clone());
            }
        }
    }
    found
}

/// The `.deb` files among the names that are the image's files, each with its package's name
/// and version (`dpkg-deb --show`).
type Debs = HashMap<String, (String, String)>;

fn deb_packages(ctx: &ModuleCtx, names: &[String]) -> Result<Debs, ModuleError> {
    let mut debs = Debs::new();
    for name in names
        .iter()
        .filter(|n| n.ends_with(".deb") && n.starts_with('/'))
    {
        if !ctx.target.fs().exists(std::path::Path::new(name))? {
            continue;
        }
        let argv = [
            "dpkg-deb",
            "--show",
            "--showformat=${Package}\t${Version}",
            name,
        ];
        let out = run(ctx, argv.map(str::to_owned).to_vec(), &[])?;
        if out.rc != 0 {
            return Err(failed(&format!("dpkg-deb --show {name}"), &out));
        }
        if let Some((package, version)) = out.stdout.trim().split_once('\t') {
            debs.insert(name.clone(), (package.to_owned(), version.to_owned()));
        }
    }
    Ok(debs)
}

/// What an `apt` (or `package` on apt) task asks for.
pub(super) struct AptRequest<'a> {
    pub(super) names: Vec<String>,
    pub(super) state: AptState,
    /// The task's `update_cache`, `None` when not given.
    pub(super) update_cache: Option<bool>,
    /// The task's `cache_valid_time` (0 when not given): a cache younger than this many
    /// seconds is not updated.
    pub(super) cache_valid_time: i64,
    pub(super) install_recommends: Option<bool>,
    pub(super) purge: bool,
    pub(super) autoremove: bool,
    pub(super) extra: &'a [String],
}

impl AptRequest<'_> {
    /// The apt-get verb for the state, and the packages it acts on: those not installed yet
    /// (present), those installed (absent), or all of them (latest, build-dep).
    fn todo(&self, before: &HashMap<String, String>, debs: &Debs) -> (&'static str, Vec<String>) {
        // A `.deb` is installed when its package is, at its version, as Ansible's apt sees it.
        let installed = |n: &String| match debs.get(n) {
            Some((name, version)) => before.get(name) == Some(version),
            None => before.contains_key(bare(n)),
        };
        match self.state {
            AptState::Present | AptState::Fixed => (
                "install",
                self.names
                    .iter()
                    .filter(|n| !installed(n))
                    .cloned()
                    .collect(),
            ),
            AptState::Latest => ("install", self.names.clone()),
            AptState::Absent => (
                if self.purge { "purge" } else { "remove" },
                installed_matches(&self.names, before),
            ),
            AptState::BuildDep => ("build-dep", self.names.clone()),
        }
    }

    /// apt-get's command line before its verb: no questions, the old config files kept, the
    /// initramfs shims in dpkg's `PATH`, the recommends choice and the task's extra options.
    fn argv(&self) -> Vec<String> {
        let mut argv: Vec<String> = vec![
            "apt-get".into(),
            "-y".into(),
            "-q".into(),
            "-o".into(),
            "Dpkg::Options::=--force-confdef".into(),
            "-o".into(),
            "Dpkg::Options::=--force-confold".into(),
            "-o".into(),
            // No fsync per file: a role that is interrupted leaves no layer anyway.
            "Dpkg::Options::=--force-unsafe-io".into(),
            // apt sets dpkg's PATH itself: the initramfs shims first (crate::initramfs).
            "-o".into(),
            format!("DPkg::Path={}", crate::shims::package_path()),
        ];
        match self.install_recommends {
            Some(false) => argv.push("--no-install-recommends".into()),
            Some(true) => argv.push("--install-recommends".into()),
            None => {}
        }
        argv.extend(self.extra.iter().cloned());
        argv
    }
}

/// Whether Ansible's apt updates the cache: `update_cache` or `cache_valid_time` asks, and the
/// cache is older than `cache_valid_time` (`mtime` and `now` in seconds).
fn needs_update(req: &AptRequest, mtime: i64, now: i64) -> bool {
    let asked = req.update_cache == Some(true) || req.cache_valid_time > 0;
    asked && !(req.cache_valid_time > 0 && mtime + req.cache_valid_time >= now)
}

/// `apt-get update`, as Ansible's apt decides it; whether the cache was updated: in check mode
/// whenever it would be, and otherwise when the cache's time stamp (in whole seconds) moved,
/// so an update that fetched nothing new did not.
fn apt_update(ctx: &ModuleCtx, req: &AptRequest) -> Result<bool, ModuleError> {
    let before = apt_cache_mtime(ctx)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    if !needs_update(req, before, now) {
        return Ok(false);
    }
    if ctx.check {
        return Ok(true);
    }
    let out = run(
        ctx,
        vec!["apt-get".into(), "update".into(), "-q".into()],
        APT_ENV,
    )?;
    if out.rc != 0 {
        return Err(failed("apt-get update", &out));
    }
    Ok(apt_cache_mtime(ctx)? != before)
}

/// The apt cache's time stamp as Ansible's apt module reads it: the update-success stamp's
/// mtime, else the lists folder's, else 0.
fn apt_cache_mtime(ctx: &ModuleCtx) -> Result<i64, ModuleError> {
    let fs = ctx.target.fs();
    for path in [
        "/var/lib/apt/periodic/update-success-stamp",
        "/var/lib/apt/lists",
    ] {
        if let Some(meta) = fs.meta_follow(std::path::Path::new(path))? {
            return Ok(meta.mtime);
        }
    }
    Ok(0)
}

/// Runs `apt-get VERB` on `todo` (when there is any) and then `autoremove` (when asked);
/// returns what apt-get said (stdout, stderr).
fn apt_get(
    ctx: &ModuleCtx,
    req: &AptRequest,
    verb: &str,
    todo: &[String],
) -> Result<(String, String), ModuleError> {
    let mut said = (String::new(), String::new());
    if !todo.is_empty() {
        let mut argv = req.argv();
        argv.push(verb.into());
        argv.extend(todo.iter().cloned());
        let out = run(ctx, argv, APT_ENV)?;
        if out.rc != 0 {
            return Err(failed(&format!("apt-get {verb}"), &out));
        }
        said = (out.stdout, out.stderr);
    }
    if req.autoremove {
        let out = run(
            ctx,
            vec!["apt-get".into(), "-y".into(), "autoremove".into()],
            APT_ENV,
        )?;
        if out.rc != 0 {
            return Err(failed("apt-get autoremove", &out));
        }
    }
    Ok(said)
}

/// Runs an apt request as Ansible's apt module does: apt's Python bindings first (installed
/// when missing, `python_apt`), then [`apt_act`]; the warnings with the result.
pub(super) fn apt_run(ctx: &ModuleCtx, req: AptRequest) -> Result<ModuleResult, ModuleError> {
    let warnings = super::python_apt::ensure(ctx, req.update_cache)?;
    let result = apt_act(ctx, req)?;
    Ok(match warnings.is_empty() {
        true => result,
        false => result.with("warnings", json!(warnings)),
    })
}

/// The cache update, the packages' install or removal, the report of what changed, as
/// Ansible's apt reports it.
fn apt_act(ctx: &ModuleCtx, req: AptRequest) -> Result<ModuleResult, ModuleError> {
    let cache_updated = apt_update(ctx, &req)?;
    if req.names.is_empty() && !req.autoremove {
        // Ansible's apt: with nothing else to do, the task changed what the update changed.
        return Ok(ModuleResult::changed(cache_updated).with("cache_updated", cache_updated));
    }
    let debs = deb_packages(ctx, &req.names)?;
    let queried: Vec<String> = req
        .names
        .iter()
        .map(|n| {
            debs.get(n)
                .map_or_else(|| n.clone(), |(name, _)| name.clone())
        })
        .collect();
    let before = dpkg_versions(ctx, &queried)?;
    let (verb, todo) = req.todo(&before, &debs);
    // Ansible's apt reports cache_updated on installs only; a removal says what apt-get said.
    let removing = matches!(req.state, AptState::Absent);
    if todo.is_empty() && !req.autoremove {
        return Ok(if removing {
            ModuleResult::changed(false)
        } else {
            ModuleResult::changed(false).with("cache_updated", cache_updated)
        });
    }
    if ctx.check {
        return Ok(ModuleResult {
            changed: !todo.is_empty(),
            msg: Some(format!("would {verb} {}", todo.join(" "))),
            ..ModuleResult::default()
        });
    }
    let said = apt_get(ctx, &req, verb, &todo)?;
    let after = dpkg_versions(ctx, &queried)?;
    let mut result = ModuleResult::changed(after != before).with("packages", json!(todo));
    if after != before {
        // Ansible shows apt-get's output only when it did something.
        result = result.with("stdout", said.0).with("stderr", said.1);
    }
    if !removing {
        result = result.with("cache_updated", cache_updated);
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_is_updated_when_asked_and_older_than_its_valid_time() {
        let req = |update_cache, cache_valid_time| AptRequest {
            names: Vec::new(),
            state: AptState::Present,
            update_cache,
            cache_valid_time,
            install_recommends: None,
            purge: false,
            autoremove: false,
            extra: &[],
        };
        assert!(!needs_update(&req(None, 0), 0, 100));
        assert!(!needs_update(&req(Some(false), 0), 0, 100));
        assert!(needs_update(&req(Some(true), 0), 100, 100));
        assert!(needs_update(&req(Some(true), 10), 89, 100));
        assert!(!needs_update(&req(Some(true), 10), 90, 100));
        assert!(
            needs_update(&req(None, 10), 0, 100),
            "cache_valid_time alone asks too"
        );
    }

    #[test]
    fn a_deb_is_installed_when_its_package_is_at_its_version() {
        let deb = "/var/cache/apt/archives/hello_2.10-3_amd64.deb".to_owned();
        let req = AptRequest {
            names: vec![deb.clone()],
            state: AptState::Present,
            update_cache: None,
            cache_valid_time: 0,
            install_recommends: None,
            purge: false,
            autoremove: false,
            extra: &[],
        };
        let debs: Debs = [(deb.clone(), ("hello".to_owned(), "2.10-3".to_owned()))].into();
        let with = |version: &str| -> HashMap<String, String> {
            [("hello".to_owned(), version.to_owned())].into()
        };
        assert!(req.todo(&with("2.10-3"), &debs).1.is_empty());
        assert_eq!(
            req.todo(&with("2.10-2"), &debs).1,
            std::slice::from_ref(&deb)
        );
        assert_eq!(req.todo(&HashMap::new(), &debs).1, [deb]);
    }

    #[test]
    fn removal_expands_patterns_to_the_installed_packages_they_match() {
        let before: HashMap<String, String> = [("hello", "2.10-3"), ("help2man", "1.49")]
            .into_iter()
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect();
        let names = |list: &[&str]| list.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            installed_matches(&names(&["hel?o", "he?lo"]), &before),
            ["hello"]
        );
        assert_eq!(
            installed_matches(&names(&["hel*", "zsh"]), &before),
            ["hello", "help2man"]
        );
        assert_eq!(
            installed_matches(&names(&["hello=2.10-3", "he"]), &before),
            ["hello"]
        );
    }
}
