//! `package`: install or remove packages with the rootfs's package manager.
//!
//! Packages through the image's own package manager (`ansible_pkg_mgr`).

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::packages::AptState;
use super::packages::{apt_run, AptRequest};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
pub use super::types::PackageState;
use super::types::{Choice, Text, TextList};
use crate::spec::PackageFamily;
use serde_json::Value as Json;

/// Parameters of `package`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PackageParams {
    /// Package names (`pkg`: Ansible passes it on to apt, dnf and yum, which take it).
    #[serde(alias = "pkg")]
    pub name: TextList,
    /// Present, latest or absent.
    pub state: Option<Choice<PackageState>>,
    /// Force a package manager (`apt`, `dnf`).
    #[serde(rename = "use")]
    pub use_: Option<Text>,
}

impl Params for PackageParams {}

/// `package`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "package",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["name"],
    normalize: super::spec::normalize_with::<PackageParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::PackageNames,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `package`: the image's own package manager (`ansible_pkg_mgr`).
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: PackageParams = params(SPEC.name, args)?;
    let state = match p.state {
        Some(Choice::Known(s)) => s,
        Some(Choice::Deferred(t)) => {
            return Err(ModuleError::new(format!("state '{t}' was not resolved")))
        }
        None => PackageState::Present,
    };
    // `use: auto`, Ansible's default, is the image's own manager.
    let manager = p
        .use_
        .as_ref()
        .map(|u| u.to_string())
        .filter(|u| u != "auto")
        .unwrap_or_else(|| ctx.pkg_mgr.to_owned());
    match PackageFamily::of_pkg_mgr(&manager) {
        Some(PackageFamily::Apt) => apt_run(
            ctx,
            AptRequest {
                names: p.name.0,
                state: match state {
                    PackageState::Present => AptState::Present,
                    PackageState::Latest => AptState::Latest,
                    PackageState::Absent => AptState::Absent,
                },
                update_cache: None,
                cache_valid_time: 0,
                install_recommends: None,
                purge: false,
                autoremove: false,
                extra: &[],
            },
        ),
        Some(PackageFamily::Dnf) => super::dnf::run_request(
            ctx,
            &super::dnf::Request {
                names: p.name.0,
                state,
                options: vec![
                    super::dnf::LOCAL_GPGCHECK.into(),
                    "--setopt=clean_requirements_on_remove=False".into(),
                ],
                nobest: false,
                autoremove: false,
                update_only: false,
                download_only: false,
            },
        ),
        None => Err(ModuleError::new(format!(
            "package manager '{manager}' is not supported; imgbuild drives apt and dnf"
        ))),
    }
}
