//! `yum_repository`: a `.repo` file of the image (dnf reads it when later tasks install).

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, PackageFamily, Params, PlanTime};
use super::types::{Choice, Flag, Mode, Text, TextList};

crate::choices!(
    /// Whether the repository section is there.
    RepoState { Present => "present", Absent => "absent" }
);

/// Parameters of `yum_repository`: every option ansible-core 2.14's module takes (each, when
/// given, is a `key = value` line of the repository's section), and the file's attributes.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct YumRepositoryParams {
    /// The repository id (the `[section]`).
    pub name: Text,
    /// Its `name =` (required to add a repository).
    pub description: Option<Text>,
    /// `async`: parallel downloads.
    #[serde(rename = "async")]
    pub async_: Option<Flag>,
    /// Bandwidth limit.
    pub bandwidth: Option<Text>,
    /// Base URLs.
    pub baseurl: Option<TextList>,
    /// Cost.
    pub cost: Option<Text>,
    /// Delta RPM metadata percentage.
    pub deltarpm_metadata_percentage: Option<Text>,
    /// Delta RPM percentage.
    pub deltarpm_percentage: Option<Text>,
    /// Enabled.
    pub enabled: Option<Flag>,
    /// Groups from this repository.
    pub enablegroups: Option<Flag>,
    /// Packages to leave out.
    #[serde(alias = "excludepkgs")]
    pub exclude: Option<TextList>,
    /// `roundrobin` or `priority`.
    pub failovermethod: Option<Text>,
    /// CA key URL.
    pub gpgcakey: Option<Text>,
    /// Check package signatures.
    pub gpgcheck: Option<Flag>,
    /// Key URLs.
    pub gpgkey: Option<TextList>,
    /// Let modular filtering ignore this repository.
    pub module_hotfixes: Option<Flag>,
    /// `all`, `packages` or `none`.
    pub http_caching: Option<Text>,
    /// A URL of further settings.
    pub include: Option<Text>,
    /// The only packages to take.
    pub includepkgs: Option<TextList>,
    /// `4`, `6`, `IPv4`, `IPv6` or `whatever`.
    pub ip_resolve: Option<Text>,
    /// HTTP keepalive.
    pub keepalive: Option<Flag>,
    /// Keep downloaded packages (`0` or `1`).
    pub keepcache: Option<Text>,
    /// Metadata lifetime.
    pub metadata_expire: Option<Text>,
    /// When expired metadata is still used.
    pub metadata_expire_filter: Option<Text>,
    /// A metalink URL.
    pub metalink: Option<Text>,
    /// A mirror list URL.
    pub mirrorlist: Option<Text>,
    /// The mirror list's lifetime.
    pub mirrorlist_expire: Option<Text>,
    /// Removed in Ansible 2.5: refused as the module refuses it.
    pub params: Option<serde_json::Value>,
    /// Password for the repository.
    pub password: Option<Text>,
    /// Priority.
    pub priority: Option<Text>,
    /// Protect packages from updates from other repositories.
    pub protect: Option<Flag>,
    /// Proxy URL.
    pub proxy: Option<Text>,
    /// Proxy password.
    pub proxy_password: Option<Text>,
    /// Proxy user.
    pub proxy_username: Option<Text>,
    /// Check the repository metadata's signature.
    pub repo_gpgcheck: Option<Flag>,
    /// Retries.
    pub retries: Option<Text>,
    /// S3 repository.
    pub s3_enabled: Option<Flag>,
    /// Skip when unreachable.
    pub skip_if_unavailable: Option<Flag>,
    /// CA certificate file for TLS.
    #[serde(alias = "ca_cert")]
    pub sslcacert: Option<Text>,
    /// Check the permissions of the TLS files.
    pub ssl_check_cert_permissions: Option<Flag>,
    /// Client certificate file.
    #[serde(alias = "client_cert")]
    pub sslclientcert: Option<Text>,
    /// Client key file.
    #[serde(alias = "client_key")]
    pub sslclientkey: Option<Text>,
    /// Verify TLS.
    #[serde(alias = "validate_certs")]
    pub sslverify: Option<Flag>,
    /// Bandwidth throttle.
    pub throttle: Option<Text>,
    /// Timeout.
    pub timeout: Option<Text>,
    /// Variables shown in repository ids.
    pub ui_repoid_vars: Option<Text>,
    /// User for the repository.
    pub username: Option<Text>,
    /// Send countme (a later ansible-core's; refused by the planner for 2.14).
    pub countme: Option<Flag>,
    /// The file name without `.repo` (default: the name).
    pub file: Option<Text>,
    /// The folder (default `/etc/yum.repos.d`).
    pub reposdir: Option<Text>,
    /// Present or absent.
    pub state: Option<Choice<RepoState>>,
    /// Mode.
    pub mode: Option<Mode>,
    /// Owner.
    pub owner: Option<Text>,
    /// Group.
    pub group: Option<Text>,
    /// Extended attributes (`chattr` letters; accepted, not applied in an image build).
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for YumRepositoryParams {}

/// `yum_repository`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "yum_repository",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["baseurl", "gpgkey"],
    normalize: super::spec::normalize_with::<YumRepositoryParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: Some(PackageFamily::Dnf),
    controller_folder: false,
    build_expressions: &[],
};
