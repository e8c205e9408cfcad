//! The modules a task may use, one file each, with Ansible's parameter names: what the planner
//! reads of a module (its parameters, its plan-time facts) and what the engine runs of it, in
//! the same file, as an Ansible module holds its argument spec and its `main`.
//!
//! Each module's `Params` is a typed struct with `deny_unknown_fields`, so a misspelt parameter
//! is a plan-time error. Planning turns a task's arguments into the canonical JSON of its
//! `Params` (aliases resolved, `yes` read as `true`, modes as octal text). A module that runs in
//! the image has `pub fn run`: it reads its typed parameters and acts on the [`target`],
//! reporting `changed` honestly and changing nothing in check mode.
//!
//! Below the modules is what they act through: the confined file access ([`rootfs`]), the
//! [`target`] a command runs in, archives and the paths of imgbuild's shims. The engine gives
//! them a real target (a chroot in private namespaces) and runs them; the planner reads their
//! specs.

pub mod spec;
pub mod types;

pub mod ansible_action;
pub mod ansible_code;
pub mod ansible_options;
pub mod ansible_runner;

// What the modules act through.
pub mod archive;
pub mod become_user;
pub mod rootfs;
pub mod shims;
pub mod target;
pub mod utc;

// What several modules share.
mod api;
mod attrs;
pub mod build_only;
mod checksum;
mod file_at;
mod file_diff;
mod file_links;
mod file_times;
mod hostconf;
mod lineinfile_edit;
mod package_cmd;
mod packages;
mod pathinfo;
mod pip_version;
mod probe;
mod python_apt;
mod repos;
pub mod required;
mod symbolic_mode;
mod textdiff;
mod tzif;
mod users;

pub use api::{flag, params, DownloadError, Downloader, ModuleCtx, ModuleError, ModuleResult};
use serde_json::Value as Json;
pub use spec::{
    check_regex, exactly_one, normalize_with, FreeForm, ModuleSpec, Params, PlanTime, Runs,
};
pub use textdiff::unified;

/// A target-side module's implementation.
pub type RunModule = fn(&Json, &ModuleCtx) -> Result<ModuleResult, ModuleError>;

/// Runs a target-side module; `None` when `module` is not one (controller modules).
pub fn run(
    module: &str,
    args: &Json,
    ctx: &ModuleCtx,
) -> Option<Result<ModuleResult, ModuleError>> {
    let (_, implementation) = TARGET_MODULES.iter().find(|(name, _)| *name == module)?;
    let mut outcome = implementation(args, ctx);
    match &mut outcome {
        Ok(result) => api::split_output(&mut result.fields),
        Err(error) => api::split_output(&mut error.fields),
    }
    if module == role_module::MODULE {
        // A role's own module answers for itself, as under Ansible.
        return Some(outcome);
    }
    let fs = ctx.target.fs();
    Some(match outcome {
        Ok(mut result) => pathinfo::add_path_info(fs, &mut result.fields).map(|()| result),
        // Ansible's failures carry the path's facts too, where they can be read: the
        // failure itself is what the task reports.
        Err(mut error) => {
            let _ = pathinfo::add_path_info(fs, &mut error.fields);
            Err(error)
        }
    })
}

/// Whether `module`'s action plugin in ansible-core 2.14 takes `async` (see
/// [`ansible_options::REFUSING_ASYNC`]).
pub fn action_supports_async(module: &str) -> bool {
    !ansible_options::REFUSING_ASYNC.contains(&module)
}

/// The name of the project file a task of `module` reads, from its arguments: `src`, or the
/// script of `script` (the first word of its command line, as the action's `shlex.split`).
pub fn local_source(module: &str, args: &Json) -> Option<String> {
    if lookup(module).is_some_and(|spec| spec.plan_time == PlanTime::PushScript) {
        let cmd = args.get("cmd").and_then(Json::as_str)?;
        return ansible::shlex::split(cmd.trim()).ok()?.into_iter().next();
    }
    args.get("src").and_then(Json::as_str).map(str::to_owned)
}

/// The names of the deferred arguments after `normalize` turned `written` into `args`: an
/// alias written (`path` of slurp) is known by its canonical name (`src`), which holds the same
/// template text.
pub fn canonical_deferred(deferred: Vec<String>, written: &Json, args: &Json) -> Vec<String> {
    deferred
        .into_iter()
        .map(|key| {
            if args.get(&key).is_some() {
                return key;
            }
            let raw = written.get(&key);
            args.as_object()
                .and_then(|map| map.iter().find(|(_, v)| Some(*v) == raw))
                .map_or(key, |(canonical, _)| canonical.clone())
        })
        .collect()
}

/// A module argument that a template gave: ansible-core 2.14 hands modules the text of a
/// template's result, so a number given through a template becomes its digits. For a mode that
/// matters: `mode: "{{ item.mode }}"` with the YAML octal `0644` (420) is the text "420", which
/// Ansible reads as octal 0420 where the literal 0644 would be 0644.
pub fn templated_argument(key: &str, rendered: Json) -> Json {
    match rendered {
        Json::Number(n) if matches!(key, "mode" | "directory_mode") => Json::String(n.to_string()),
        other => other,
    }
}

/// Why `field`, which imgbuild's `module` does not take, is refused, when ansible-core 2.14's
/// module takes it (valid Ansible, so never an "unknown field"); `None` when Ansible does not
/// take it either.
pub fn not_yet_supported(module: &str, field: &str) -> Option<String> {
    if let Some(removed) = ansible_options::removed(module, field) {
        return Some(format!(
            "`{field}` was taken by Ansible {} and removed in 2.14, the Ansible imgbuild matches: remove it",
            removed.last_taken
        ));
    }
    let (_, options) = ansible_options::ANSIBLE_2_14
        .iter()
        .find(|(name, _)| *name == module)?;
    options.contains(&field).then(|| {
        format!(
            "ansible-core 2.14's {module} module takes `{field}`; imgbuild does not support it yet: remove it, or do its work in a task imgbuild runs (for example shell)"
        )
    })
}

/// Declares each module's file, puts its specs in [`ALL`] in order, the implementations of
/// those that run in the image in [`TARGET_MODULES`], and says where each runs
/// ([`ModuleSpec::runs`]). A module is its file and one line of the `registry!` below:
///
/// - `name: target,` for a module that runs in the image: its file `name.rs` holds its
///   parameters, its `SPEC` and the `pub fn run` that acts on the rootfs;
/// - `name: controller,` for one imgbuild runs itself: the engine's executor runs it with the
///   implementation at the same path in its `controller_modules` (`set_fact::SPEC`), made
///   into its table from `for_each_controller_module!` (a missing one does not compile);
///   `name: controller [A, B],` for a file of several such specs (`host_only::PAUSE`);
/// - `name: target [],` for a target module no task names directly (a role's own module).
macro_rules! registry {
    (@collect [$($all:tt)*] [$(($cm:ident $cs:ident))*] [$($t:ident)*] ($d:tt)) => {
        /// Every module.
        pub static ALL: &[&ModuleSpec] = &[$($all)*];

        /// The modules imgbuild runs itself (`name: controller` in the registry).
        static CONTROLLER: &[&ModuleSpec] = &[$(&$cm::$cs,)*];

        /// Every module that runs in the rootfs, by its spec's name: the registry's target
        /// modules (a role's own module among them), then the internal build-only step, which
        /// a recipe variable plans.
        pub static TARGET_MODULES: &[(&str, RunModule)] = &[
            $(($t::SPEC.name, $t::run),)*
            (build_only::MODULE, build_only::remove),
        ];

        /// Calls the macro named `$callback` with the path of every spec imgbuild runs itself
        /// (`name: controller` in the registry), as `callback! { assert::SPEC, ...,
        /// host_only::PAUSE, ... }`: the engine's executor makes its table of them from it.
        #[macro_export]
        macro_rules! for_each_controller_module {
            ($d callback:ident) => {
                $d callback! { $($cm::$cs),* }
            };
        }
    };
    (@collect [$($all:tt)*] [$($c:tt)*] [$($t:ident)*] ($d:tt)
        $module:ident: target, $($rest:tt)*) => {
        pub mod $module;
        registry!(@collect [$($all)* &$module::SPEC,] [$($c)*] [$($t)* $module] ($d) $($rest)*);
    };
    (@collect [$($all:tt)*] [$($c:tt)*] [$($t:ident)*] ($d:tt)
        $module:ident: target [], $($rest:tt)*) => {
        pub mod $module;
        registry!(@collect [$($all)*] [$($c)*] [$($t)* $module] ($d) $($rest)*);
    };
    (@collect [$($all:tt)*] [$($c:tt)*] [$($t:ident)*] ($d:tt)
        $module:ident: controller, $($rest:tt)*) => {
        pub mod $module;
        registry!(@collect [$($all)* &$module::SPEC,] [$($c)* ($module SPEC)] [$($t)*] ($d)
            $($rest)*);
    };
    (@collect [$($all:tt)*] [$($c:tt)*] [$($t:ident)*] ($d:tt)
        $module:ident: controller [$($spec:ident),*], $($rest:tt)*) => {
        pub mod $module;
        registry!(@collect [$($all)* $(&$module::$spec,)*] [$($c)* $(($module $spec))*]
            [$($t)*] ($d) $($rest)*);
    };
    ($($body:tt)*) => {
        registry!(@collect [] [] [] ($) $($body)*);
    };
}

registry! {
    alternatives: target,
    apt: target,
    apt_key: target,
    apt_repository: target,
    assemble: target,
    authorized_key: target,
    assert: controller,
    async_status: controller,
    blockinfile: target,
    command: target,
    copy: target,
    deb822_repository: target,
    debconf: target,
    debug: controller,
    dnf: target,
    fail: controller,
    file: target,
    find: target,
    get_url: target,
    group: target,
    host_only: controller [PAUSE, REBOOT, SETUP, WAIT_FOR, WAIT_FOR_CONNECTION],
    include_vars: controller,
    inventory: controller [ADD_HOST, GROUP_BY],
    ini_file: target,
    kernel_blacklist: target,
    known_hosts: target,
    lineinfile: target,
    meta: controller,
    modprobe: target,
    mount: target,
    package: target,
    package_facts: target,
    pam_limits: target,
    patch: target,
    ping: controller,
    pip: target,
    replace: target,
    rpm_key: target,
    script: target,
    selinux: target,
    service: target,
    service_facts: target,
    set_fact: controller,
    shell: target,
    slurp: target,
    getent: target,
    stat: target,
    synchronize: target,
    sysctl: target,
    systemd: target,
    tempfile: target,
    template: target,
    timezone: target,
    unarchive: target,
    uri: target,
    user: target,
    yum_repository: target,
    role_module: target [],
}

impl ModuleSpec {
    /// Where the module runs, as its line of the registry says.
    pub fn runs(&self) -> Runs {
        match CONTROLLER.iter().any(|spec| std::ptr::eq(*spec, self)) {
            true => Runs::Controller,
            false => Runs::Target,
        }
    }
}

/// Collection prefixes whose modules imgbuild implements under their short names.
const BUILTIN_PREFIXES: &[&str] = &[
    "ansible.builtin.",
    "ansible.legacy.",
    "ansible.posix.",
    "community.general.",
];

/// Finds a module by short name, alias or FQCN (`ansible.builtin.get_url`).
pub fn lookup(name: &str) -> Option<&'static ModuleSpec> {
    let short = BUILTIN_PREFIXES
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .unwrap_or(name);
    ALL.iter()
        .copied()
        .find(|m| m.name == short || m.aliases.contains(&short))
}

/// Every accepted short name and alias, for suggestions.
pub fn names() -> impl Iterator<Item = &'static str> {
    ALL.iter()
        .flat_map(|m| std::iter::once(m.name).chain(m.aliases.iter().copied()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The table holds what the registry says runs in the image: every target spec of
    /// [`ALL`], a role's own module and the build-only step, each once.
    #[test]
    fn the_table_holds_the_registry_s_target_modules() {
        let mut planned: Vec<&str> = ALL
            .iter()
            .filter(|spec| spec.runs() == Runs::Target)
            .map(|spec| spec.name)
            .chain([role_module::MODULE, build_only::MODULE])
            .collect();
        let mut implemented: Vec<&str> = TARGET_MODULES.iter().map(|(name, _)| *name).collect();
        planned.sort_unstable();
        implemented.sort_unstable();
        assert_eq!(planned, implemented);
    }

    #[test]
    fn a_module_reads_its_project_files_from_its_folder() {
        let folder = |name: &str| lookup(name).map(ModuleSpec::file_folder);
        assert_eq!(folder("ansible.builtin.template"), Some("templates"));
        assert_eq!(folder("include_vars"), Some("vars"));
        assert_eq!(folder("copy"), Some("files"));
        assert_eq!(folder("script"), Some("files"));
    }

    #[test]
    fn lookup_short_fqcn_and_alias() {
        assert_eq!(
            lookup("ansible.builtin.get_url").map(|m| m.name),
            Some("get_url")
        );
        assert_eq!(
            lookup("ansible.legacy.shell").map(|m| m.name),
            Some("shell")
        );
        assert_eq!(lookup("yum").map(|m| m.name), Some("dnf"));
        assert!(lookup("community.general.nope").is_none());
    }

    #[test]
    fn a_missing_required_option_is_named_as_ansible_names_it() {
        let err = (file::SPEC.normalize)(json!({"state": "hard"})).expect_err("no path");
        assert_eq!(err, "missing required arguments: path");
    }

    #[test]
    fn unknown_parameter_is_rejected_with_the_known_ones() {
        let err = (get_url::SPEC.normalize)(json!({"url": "http://x/a", "dset": "/tmp/a"}))
            .expect_err("typo");
        assert!(err.contains("dset"), "{err}");
        assert!(err.contains("dest"), "{err}");
    }

    #[test]
    fn canonical_form_resolves_aliases_and_booleans() {
        let out = (file::SPEC.normalize)(
            json!({"dest": "/x", "state": "directory", "mode": "0755", "recurse": "yes"}),
        )
        .expect("valid");
        assert_eq!(
            out,
            json!({"path": "/x", "state": "directory", "mode": "0755", "recurse": true})
        );
    }
}

#[cfg(test)]
mod alias_tests {
    use super::*;
    use serde_json::json;

    /// Every parameter alias ansible-core 2.14's documentation lists for the modules imgbuild
    /// has (`ansible-doc -j MODULE`, options' `aliases`), as (module, alias).
    const ANSIBLE_ALIASES: &[(&str, &str)] = &[
        ("apt", "allow-downgrade"),
        ("apt", "allow_downgrades"),
        ("apt", "allow-downgrades"),
        ("apt", "allow-unauthenticated"),
        ("apt", "default-release"),
        ("apt", "install-recommends"),
        ("apt", "package"),
        ("apt", "pkg"),
        ("apt", "update-cache"),
        ("copy", "attr"),
        ("file", "attr"),
        ("file", "dest"),
        ("file", "name"),
        ("template", "attr"),
        ("lineinfile", "attr"),
        ("lineinfile", "value"),
        ("lineinfile", "dest"),
        ("lineinfile", "destfile"),
        ("lineinfile", "name"),
        ("lineinfile", "regex"),
        ("blockinfile", "attr"),
        ("blockinfile", "content"),
        ("blockinfile", "dest"),
        ("blockinfile", "destfile"),
        ("blockinfile", "name"),
        ("get_url", "attr"),
        ("get_url", "password"),
        ("get_url", "username"),
        ("unarchive", "attr"),
        ("user", "createhome"),
        ("user", "user"),
        ("systemd", "daemon-reexec"),
        ("systemd", "daemon-reload"),
        ("systemd", "service"),
        ("systemd", "unit"),
        ("service", "args"),
        ("stat", "checksum"),
        ("stat", "checksum_algo"),
        ("stat", "attr"),
        ("stat", "attributes"),
        ("stat", "mime"),
        ("stat", "mime_type"),
        ("stat", "mime-type"),
        ("stat", "dest"),
        ("stat", "name"),
        ("dnf", "pkg"),
        ("dnf", "expire-cache"),
        ("find", "exclude"),
        ("find", "name"),
        ("find", "path"),
        ("find", "pattern"),
        ("replace", "attr"),
        ("replace", "dest"),
        ("replace", "destfile"),
        ("replace", "name"),
        ("ini_file", "attr"),
        ("ini_file", "dest"),
        ("sysctl", "key"),
        ("sysctl", "val"),
        ("apt_repository", "update-cache"),
        ("yum_repository", "attr"),
        ("yum_repository", "ca_cert"),
        ("yum_repository", "client_cert"),
        ("yum_repository", "client_key"),
        ("yum_repository", "validate_certs"),
        ("mount", "name"),
    ];

    #[test]
    fn every_alias_ansible_documents_is_taken() {
        let refused: Vec<String> = ANSIBLE_ALIASES
            .iter()
            .filter(|(module, alias)| {
                let spec = lookup(module).expect("a module imgbuild has");
                let err = (spec.normalize)(json!({ *alias: "x" }))
                    .err()
                    .unwrap_or_default();
                err.contains(&format!("unknown field `{alias}`"))
            })
            .map(|(module, alias)| format!("{module}: {alias}"))
            .collect();
        assert!(refused.is_empty(), "aliases refused: {refused:?}");
    }
}
