//! `package_facts`: the packages installed in the image, as `ansible_facts.packages` (a list
//! of installed versions per name), read from its package database when the build runs.
//!
//! The installed packages, read from the image's package database with its
//! own `rpm` or `dpkg-query`, in the shape Ansible's module gives (a list of installed
//! versions per name, each with its fields and `source`).

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, TextList};
use crate::target::Cmd;
use serde_json::{json, Map, Value as Json};

crate::choices!(
    /// Which of the asked package managers answer.
    Strategy { First => "first", All => "all" }
);

/// Parameters of `package_facts`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PackageFactsParams {
    /// Package managers to ask (`auto`, `rpm`, `apt`); default `auto`.
    pub manager: Option<TextList>,
    /// `first` (default): the first that answers; `all`: every one.
    pub strategy: Option<Choice<Strategy>>,
}

impl Params for PackageFactsParams {
    fn check(&self) -> Result<(), String> {
        let known = ["auto", "rpm", "apt"];
        match self.manager.iter().flat_map(|m| m.0.iter()).find(|m| {
            !known.contains(&m.to_ascii_lowercase().as_str()) && !ansible::template::is_template(m)
        }) {
            Some(other) => Err(format!(
                "manager '{other}' is not one imgbuild reads (an image is rpm or apt): write auto, rpm or apt"
            )),
            None => Ok(()),
        }
    }
}

/// `package_facts`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "package_facts",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<PackageFactsParams>,
    plan_time: PlanTime::FactsAtBuild(&["packages"]),
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// Reads one line of a package manager's listing as (name, installed version's details).
type ParseLine = fn(&str) -> Option<(String, Json)>;

/// The package managers Ansible's `auto` tries, in its order.
const AUTO: &[&str] = &["rpm", "apt"];

/// `package_facts`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: PackageFactsParams = params(SPEC.name, args)?;
    let mut managers: Vec<String> = p
        .manager
        .map(|m| m.0.iter().map(|s| s.to_ascii_lowercase()).collect())
        .unwrap_or_else(|| vec!["auto".into()]);
    if let Some(at) = managers.iter().position(|m| m == "auto") {
        managers.splice(at..=at, AUTO.iter().map(|m| (*m).to_owned()));
        managers.dedup();
    }
    let all = matches!(p.strategy, Some(Choice::Known(Strategy::All)));
    let mut packages: indexmap::IndexMap<String, Vec<Json>> = indexmap::IndexMap::new();
    let mut found = false;
    for manager in &managers {
        let Some(listed) = list(ctx, manager)? else {
            continue;
        };
        found = true;
        for (name, details) in listed {
            packages.entry(name).or_default().push(details);
        }
        if !all {
            break;
        }
    }
    if !found {
        return Err(ModuleError::new(format!(
            "Could not auto detect a usable package manager: the image has none of {}",
            managers.join(", ")
        )));
    }
    let packages: Map<String, Json> = packages
        .into_iter()
        .map(|(name, versions)| (name, Json::Array(versions)))
        .collect();
    Ok(ModuleResult::changed(false).with("ansible_facts", json!({ "packages": packages })))
}

/// The installed packages one manager lists, or `None` when the image lacks it.
fn list(ctx: &ModuleCtx, manager: &str) -> Result<Option<Vec<(String, Json)>>, ModuleError> {
    let (argv, parse): (&[&str], ParseLine) = match manager {
        "rpm" => (
            &[
                "rpm",
                "-qa",
                "--queryformat",
                "%{NAME}\\t%{VERSION}\\t%{RELEASE}\\t%{EPOCH}\\t%{ARCH}\\n",
            ],
            rpm_line,
        ),
        "apt" => (
            &[
                "dpkg-query",
                "-W",
                "-f",
                "${db:Status-Abbrev}\\t${binary:Package}\\t${Version}\\t${Architecture}\\t${Section}\\n",
            ],
            dpkg_line,
        ),
        other => {
            return Err(ModuleError::new(format!(
                "manager '{other}' is not one imgbuild reads"
            )))
        }
    };
    let out = ctx.target.run(&Cmd::new(argv))?;
    if out.rc == 127 {
        return Ok(None);
    }
    if out.rc != 0 {
        return Err(ModuleError::new(format!(
            "{} failed: {}",
            argv[0],
            out.stderr.trim()
        )));
    }
    let mut listed: Vec<(String, Json)> = out.stdout.lines().filter_map(parse).collect();
    if manager == "apt" {
        // dpkg names a Multi-Arch: same package of the image's own architecture `libc6:amd64`;
        // python-apt, which Ansible reads, names it `libc6` (a foreign one keeps its suffix).
        let native = ctx
            .target
            .run(&Cmd::new(&["dpkg", "--print-architecture"]))?
            .stdout;
        let suffix = format!(":{}", native.trim());
        for (name, details) in &mut listed {
            if let Some(base) = name.strip_suffix(&suffix).map(str::to_owned) {
                details["name"] = Json::from(base.as_str());
                *name = base;
            }
        }
    }
    Ok(Some(listed))
}

/// `name version release epoch arch` of `rpm -qa`; epoch `(none)` is null, as Ansible's.
fn rpm_line(line: &str) -> Option<(String, Json)> {
    let [name, version, release, epoch, arch] = fields(line)?;
    let epoch = epoch.parse::<i64>().map_or(Json::Null, Json::from);
    Some((
        name.to_owned(),
        json!({"name": name, "version": version, "release": release, "epoch": epoch,
               "arch": arch, "source": "rpm"}),
    ))
}

/// `status name version arch section` of `dpkg-query`: installed when dpkg has a current
/// version (not `n`ot-installed, not only `c`onfig-files), as python-apt's `is_installed`.
fn dpkg_line(line: &str) -> Option<(String, Json)> {
    let [status, name, version, arch, section] = fields(line)?;
    if matches!(status.chars().nth(1), Some('n' | 'c') | None) {
        return None;
    }
    Some((
        name.to_owned(),
        json!({"name": name, "version": version, "arch": arch, "category": section,
               "source": "apt"}),
    ))
}

fn fields(line: &str) -> Option<[&str; 5]> {
    let parts: Vec<&str> = line.split('\t').collect();
    parts.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpm_and_dpkg_lines_read_as_ansible_gives_them() {
        let (name, pkg) = rpm_line("bash\t5.1.8\t9.el9\t(none)\tx86_64").expect("a package");
        assert_eq!(name, "bash");
        assert_eq!(pkg["epoch"], Json::Null);
        assert_eq!(
            rpm_line("shim\t15\t1\t2\tx86_64").expect("epoch").1["epoch"],
            2
        );
        let (name, pkg) = dpkg_line("ii \tlibc6:i386\t2.36-9\ti386\tlibs").expect("installed");
        assert_eq!(name, "libc6:i386");
        assert_eq!(pkg["category"], "libs");
        assert!(
            dpkg_line("rc \told\t1.0\tamd64\tutils").is_none(),
            "config files only"
        );
        assert!(
            dpkg_line("iU \thalf\t1.0\tamd64\tutils").is_some(),
            "unpacked has a version"
        );
    }
}
