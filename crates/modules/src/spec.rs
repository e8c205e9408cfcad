//! What the planner knows of a module: its names, how it reads a free-form string, where it
//! runs, how its arguments are checked, and what it needs at plan time.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value as Json;

/// How a module reads a plain string given instead of a mapping (`shell: echo hi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreeForm {
    /// No free form: the string is `key=value` pairs (`file: path=/x state=touch`).
    KeyValue,
    /// The string is a command into `cmd`; these `key=value` words are taken out of it.
    Command(&'static [&'static str]),
}

/// Where a module runs: its line of the module registry says (`ModuleSpec::runs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// Inside the build rootfs.
    Target,
    /// In imgbuild itself (set_fact, debug, fail, assert).
    Controller,
}

/// A module's description for the planner.
#[derive(Debug)]
pub struct ModuleSpec {
    /// Short name (`get_url`).
    pub name: &'static str,
    /// Other short names for the same module (`yum` for `dnf`).
    pub aliases: &'static [&'static str],
    /// How a plain string argument is read.
    pub free_form: FreeForm,
    /// Parameters that are URLs of the site mirror (repeated slashes in their path collapse).
    pub url_params: &'static [&'static str],
    /// Checks and canonicalises the arguments.
    pub normalize: fn(Json) -> Result<Json, String>,
    /// What planning does for its tasks beyond checking their arguments.
    pub plan_time: PlanTime,
    /// What its tasks download, as far as the plan sees (the cache key and the mirror's list).
    pub downloads: Downloads,
    /// The package manager whose images it is for (`apt` in a dnf image is a plan error).
    pub family: Option<PackageFamily>,
    /// Delegated to the controller (`delegate_to: localhost`), it works in the build's
    /// controller folder: it only reads and writes files or makes requests. Commands,
    /// packages, users and services are not: an image build runs nothing on its build host.
    pub controller_folder: bool,
    /// The arguments the build evaluates as bare expressions (`assert`'s `that`, `debug`'s
    /// `var`): the variables they use are part of the task's runtime context.
    pub build_expressions: &'static [&'static str],
}

impl ModuleSpec {
    /// The folder of a role its project files are read from (`templates/` for a template,
    /// `vars/` for include_vars, `files/` for the others).
    pub fn file_folder(&self) -> &'static str {
        match self.plan_time {
            PlanTime::IncludeVars => "vars",
            PlanTime::RenderTemplate => "templates",
            _ => "files",
        }
    }
}

/// What a module's tasks download, as far as the plan sees their arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Downloads {
    /// Nothing.
    Nothing,
    /// The http(s) URL in this argument, which the build fetches (`get_url`'s `url`,
    /// `rpm_key`'s `key`).
    Url(&'static str),
    /// This argument, when it is remote (a URL, or `remote_src: yes`): `unarchive`'s `src`.
    RemoteSource(&'static str),
    /// Package names given as http(s) URLs of package files (`apt: name: https://.../x.deb`).
    PackageNames,
}

/// The package managers a package module can be for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackageFamily {
    /// Debian's and Ubuntu's.
    Apt,
    /// Rocky's (`yum` is its older name).
    Dnf,
}

impl PackageFamily {
    /// The family of an image's `ansible_pkg_mgr`, when imgbuild knows it.
    pub fn of_pkg_mgr(pkg_mgr: &str) -> Option<Self> {
        match pkg_mgr {
            "apt" => Some(Self::Apt),
            "dnf" | "yum" => Some(Self::Dnf),
            _ => None,
        }
    }

    /// Its name, as `ansible_pkg_mgr` says it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Apt => "apt",
            Self::Dnf => "dnf",
        }
    }
}

/// What planning does for a module's task beyond checking its arguments: the project files it
/// reads, the facts it sets, the warnings it earns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanTime {
    /// Nothing more.
    Nothing,
    /// Renders the role's template `src` (from `templates/`).
    RenderTemplate,
    /// Reads the project file `src` (from `files/`) unless `remote_src` (or unarchive's
    /// `copy: no`) says it is in the image already.
    PushSource,
    /// As [`PlanTime::PushSource`]; and an archive that Ansible's own module extracts (a zip)
    /// puts where that module comes from and its digest in the task's arguments
    /// (`ansible_code`), so the layer key changes with it.
    PushArchive,
    /// Reads the project file `src` only with `remote_src: no` (the image is the default).
    PushSourceWhenNotRemote,
    /// Reads the script its command line starts with (from `files/`).
    PushScript,
    /// Reads the patch file `src` (from `files/`).
    PushPatch,
    /// Pushes a file or folder of the role, or copies within the image (`synchronize`).
    Synchronize,
    /// Runs a role's own module from its `library/`.
    RoleModule,
    /// Sets the facts its arguments name (`set_fact`).
    SetFacts,
    /// Reads variables from project files (`include_vars`).
    IncludeVars,
    /// Changes the inventory (`group_by`, `add_host`).
    Inventory,
    /// Gathers facts: local facts (`ansible_local`) are known once the build gathers them.
    GatherFacts,
    /// Returns these facts, known once the build reads them from the image.
    FactsAtBuild(&'static [&'static str]),
    /// Returns `getent_<database>`, known once the build reads it.
    GetentFacts,
    /// Runs a command line, which earns a warning when it asks `uname`.
    RunsCommand,
    /// Manages services: `state:` earns a warning, since nothing runs in an image build.
    ManagesServices,
}

/// Typed module parameters.
pub trait Params: DeserializeOwned + Serialize {
    /// Cross-parameter rules (one of, mutually exclusive, required together).
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Deserializes, checks and re-serializes `args` as `P`.
pub fn normalize_with<P: Params>(args: Json) -> Result<Json, String> {
    let params: P = serde_json::from_value(args).map_err(|e| ansible_words(&e.to_string()))?;
    params.check()?;
    serde_json::to_value(&params).map_err(|e| e.to_string())
}

/// An argument error in the words of Ansible's argument validation where they differ from
/// serde's (a required option left out).
fn ansible_words(serde_message: &str) -> String {
    match serde_message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        Some(field) => format!("missing required arguments: {field}"),
        None => serde_message.to_owned(),
    }
}

/// A regular expression the build would compile: refused now when it cannot be (a template
/// is checked when it is rendered).
pub fn check_regex(name: &str, pattern: &str) -> Result<(), String> {
    if ansible::template::is_template(pattern) {
        return Ok(());
    }
    regex::Regex::new(pattern).map(|_| ()).map_err(|e| {
        format!("{name} {pattern:?} is not a regular expression imgbuild can use: {e}")
    })
}

/// [`check_regex`] for Python patterns with backreferences and look-around, which the modules
/// that run Python's `re` take (`lineinfile`, `replace`).
pub fn check_python_regex(name: &str, pattern: &str) -> Result<(), String> {
    if ansible::template::is_template(pattern) {
        return Ok(());
    }
    fancy_regex::Regex::new(pattern).map(|_| ()).map_err(|e| {
        format!("{name} {pattern:?} is not a regular expression imgbuild can use: {e}")
    })
}

/// Requires exactly one of the named options to be set.
pub fn exactly_one(module: &str, set: &[(&str, bool)]) -> Result<(), String> {
    let names: Vec<&str> = set.iter().map(|(n, _)| *n).collect();
    match set.iter().filter(|(_, s)| *s).count() {
        1 => Ok(()),
        0 => Err(format!("{module} needs one of: {}", names.join(", "))),
        _ => Err(format!("{module} takes only one of: {}", names.join(", "))),
    }
}
