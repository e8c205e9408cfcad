//! `dnf` (and `yum`): Rocky and RHEL packages in the rootfs.

use serde::{Deserialize, Serialize};

use super::package::PackageState;
use super::spec::{Downloads, FreeForm, ModuleSpec, PackageFamily, Params, PlanTime};
use super::types::{Choice, Flag, Int, Text, TextList};

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
