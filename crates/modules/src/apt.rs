//! `apt`: Debian and Ubuntu packages in the rootfs.
//!
//! Debian packages in the rootfs, through its own apt-get.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
pub use super::packages::AptState;
use super::packages::{apt_run, AptRequest};
use super::spec::{Downloads, FreeForm, ModuleSpec, PackageFamily, Params, PlanTime};
use super::types::{Choice, Flag, Int, Text, TextList};
use serde_json::Value as Json;

crate::choices!(
    /// `apt upgrade` modes.
    AptUpgrade { No => "no", Yes => "yes", Safe => "safe", Full => "full", Dist => "dist" }
);

/// Parameters of `apt`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AptParams {
    /// Package names (`name=version` pins a version).
    #[serde(alias = "pkg", alias = "package")]
    pub name: Option<TextList>,
    /// What to do with them.
    pub state: Option<Choice<AptState>>,
    /// A `.deb` file or URL to install.
    pub deb: Option<Text>,
    /// Run `apt-get update` first.
    #[serde(alias = "update-cache")]
    pub update_cache: Option<Flag>,
    /// Skip the update when the cache is younger than this many seconds.
    pub cache_valid_time: Option<Int>,
    /// Install recommended packages.
    #[serde(alias = "install-recommends")]
    pub install_recommends: Option<Flag>,
    /// Purge configuration with `absent`.
    pub purge: Option<Flag>,
    /// Remove no longer needed dependencies.
    pub autoremove: Option<Flag>,
    /// Clean the package cache of old packages.
    pub autoclean: Option<Flag>,
    /// Clean the whole package cache.
    pub clean: Option<Flag>,
    /// Upgrade mode.
    pub upgrade: Option<Choice<AptUpgrade>>,
    /// Only upgrade installed packages.
    pub only_upgrade: Option<Flag>,
    /// Target release (`-t`).
    #[serde(alias = "default-release")]
    pub default_release: Option<Text>,
    /// dpkg options (`force-confdef,force-confold`).
    pub dpkg_options: Option<Text>,
    /// Force (`--force-yes`).
    pub force: Option<Flag>,
    /// Allow unauthenticated packages.
    #[serde(alias = "allow-unauthenticated")]
    pub allow_unauthenticated: Option<Flag>,
    /// Allow downgrades.
    #[serde(
        alias = "allow-downgrade",
        alias = "allow_downgrades",
        alias = "allow-downgrades"
    )]
    pub allow_downgrade: Option<Flag>,
    /// Allow changing held packages.
    pub allow_change_held_packages: Option<Flag>,
    /// Fail when autoremove would remove packages.
    pub fail_on_autoremove: Option<Flag>,
    /// Use apt-get even where aptitude exists.
    pub force_apt_get: Option<Flag>,
    /// Seconds to wait for the dpkg lock.
    pub lock_timeout: Option<Int>,
    /// policy-rc.d exit code while installing (services never start in a rootfs anyway).
    pub policy_rc_d: Option<Int>,
}

impl Params for AptParams {}

/// `apt`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "apt",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["deb"],
    normalize: super::spec::normalize_with::<AptParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::PackageNames,
    family: Some(PackageFamily::Apt),
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `apt`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: AptParams = params(SPEC.name, args)?;
    let mut names: Vec<String> = p.name.map(|TextList(n)| n).unwrap_or_default();
    if let Some(deb) = &p.deb {
        names.push(deb.to_string());
    }
    let state = match p.state {
        Some(Choice::Known(s)) => s,
        Some(Choice::Deferred(t)) => {
            return Err(ModuleError::new(format!("state '{t}' was not resolved")))
        }
        None => AptState::Present,
    };
    let mut extra = Vec::new();
    if let Some(release) = &p.default_release {
        extra.extend(["-t".to_owned(), release.to_string()]);
    }
    if flag(&p.allow_downgrade, false) {
        extra.push("--allow-downgrades".into());
    }
    if flag(&p.allow_change_held_packages, false) {
        extra.push("--allow-change-held-packages".into());
    }
    // Ansible's apt gives apt-get `--no-remove` for every state but absent.
    if flag(&p.fail_on_autoremove, false) && state != AptState::Absent {
        extra.push("--no-remove".into());
    }
    apt_run(
        ctx,
        AptRequest {
            names,
            state,
            update_cache: p.update_cache.as_ref().map(|f| f.or(true)),
            cache_valid_time: match p.cache_valid_time {
                Some(Int::Known(seconds)) => seconds,
                _ => 0,
            },
            install_recommends: p.install_recommends.as_ref().map(|f| f.or(true)),
            purge: flag(&p.purge, false),
            autoremove: flag(&p.autoremove, false),
            extra: &extra,
        },
    )
}
