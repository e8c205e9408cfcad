//! dnf's `list` parameter: packages (installed, upgrades, available, or those a spec
//! matches) or enabled repositories, in the shape ansible-core 2.14's module lists them.

use serde_json::{json, Value as Json};

use crate::api::{ModuleCtx, ModuleError, ModuleResult};
use crate::package_cmd::{failed, run};

/// repoquery's fields, in `_package_dict`'s terms.
const QF: &str = "%{name}\t%{arch}\t%{epoch}\t%{release}\t%{version}\t%{repoid}";

/// One package as the module's `_package_dict` makes it.
fn package(line: &str) -> Option<Json> {
    let fields: Vec<&str> = line.split('\t').collect();
    let [name, arch, epoch, release, version, repo] = fields.as_slice() else {
        return None;
    };
    let envra = format!("{epoch}:{name}-{version}-{release}.{arch}");
    let state = if *repo == "@System" {
        "installed"
    } else {
        "available"
    };
    Some(
        json!({"name": name, "arch": arch, "epoch": epoch, "release": release,
                "version": version, "repo": repo, "envra": envra, "nevra": envra,
                "yumstate": state}),
    )
}

/// The packages `dnf repoquery` lists with `selection` (a flag or a spec).
fn query(
    ctx: &ModuleCtx,
    options: &[String],
    selection: &[&str],
) -> Result<Vec<Json>, ModuleError> {
    let mut argv: Vec<String> = vec!["dnf".into(), "-q".into()];
    argv.extend(options.iter().cloned());
    argv.extend(["repoquery".into(), "--qf".into(), QF.into()]);
    argv.extend(selection.iter().map(|s| (*s).to_owned()));
    let out = run(ctx, argv, &[])?;
    if out.rc != 0 {
        return Err(failed("dnf repoquery", &out));
    }
    Ok(out.stdout.lines().filter_map(package).collect())
}

/// The enabled repositories, as `{repoid, state}`.
fn repos(ctx: &ModuleCtx, options: &[String]) -> Result<Vec<Json>, ModuleError> {
    let mut argv: Vec<String> = vec!["dnf".into(), "-q".into()];
    argv.extend(options.iter().cloned());
    argv.extend(["repolist".into(), "--enabled".into()]);
    let out = run(ctx, argv, &[])?;
    if out.rc != 0 {
        return Err(failed("dnf repolist", &out));
    }
    Ok(out
        .stdout
        .lines()
        .filter(|l| !l.starts_with("repo id"))
        .filter_map(|l| l.split_whitespace().next())
        .map(|id| json!({"repoid": id, "state": "enabled"}))
        .collect())
}

/// `list`: what the module's `list_items` returns.
pub fn list(ctx: &ModuleCtx, what: &str, options: &[String]) -> Result<ModuleResult, ModuleError> {
    let mut results = match what {
        "installed" => query(ctx, options, &["--installed"])?,
        "updates" | "upgrades" => query(ctx, options, &["--upgrades"])?,
        "available" => query(ctx, options, &[])?,
        "repos" | "repositories" => repos(ctx, options)?,
        // A spec matches installed packages and available ones (each its own entry).
        spec => {
            let mut found = query(ctx, options, &["--installed", spec])?;
            found.extend(query(ctx, options, &[spec])?);
            found
        }
    };
    results.sort_by_key(|r| r.to_string());
    Ok(ModuleResult {
        msg: Some(String::new()),
        ..ModuleResult::changed(false)
    }
    .with("results", results))
}
