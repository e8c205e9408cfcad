//! `yum_repository`: a `.repo` file of the image (dnf reads it when later tasks install).

use serde::{Deserialize, Serialize};

use super::types::{Choice, Flag, Mode, Text, TextList};
use super::{FreeForm, ModuleSpec, Params, Runs};

crate::choices!(
    /// Whether the repository section is there.
    RepoState { Present => "present", Absent => "absent" }
);

/// Parameters of `yum_repository` (the settings a site repository uses).
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct YumRepositoryParams {
    /// The repository id (the `[section]`).
    pub name: Text,
    /// Its `name=`.
    pub description: Option<Text>,
    /// Base URLs.
    pub baseurl: Option<TextList>,
    /// A mirror list URL.
    pub mirrorlist: Option<Text>,
    /// A metalink URL.
    pub metalink: Option<Text>,
    /// Enabled.
    pub enabled: Option<Flag>,
    /// Check package signatures.
    pub gpgcheck: Option<Flag>,
    /// Key URLs.
    pub gpgkey: Option<TextList>,
    /// Check the repository metadata's signature.
    pub repo_gpgcheck: Option<Flag>,
    /// Priority.
    pub priority: Option<Text>,
    /// Cost.
    pub cost: Option<Text>,
    /// Packages to leave out.
    #[serde(alias = "excludepkgs")]
    pub exclude: Option<TextList>,
    /// The only packages to take.
    pub includepkgs: Option<TextList>,
    /// Let modular filtering ignore this repository.
    pub module_hotfixes: Option<Flag>,
    /// Verify TLS.
    #[serde(alias = "validate_certs")]
    pub sslverify: Option<Flag>,
    /// CA certificate file for TLS.
    #[serde(alias = "ca_cert")]
    pub sslcacert: Option<Text>,
    /// Client certificate file.
    #[serde(alias = "client_cert")]
    pub sslclientcert: Option<Text>,
    /// Client key file.
    #[serde(alias = "client_key")]
    pub sslclientkey: Option<Text>,
    /// Skip when unreachable.
    pub skip_if_unavailable: Option<Flag>,
    /// Metadata lifetime.
    pub metadata_expire: Option<Text>,
    /// Proxy URL.
    pub proxy: Option<Text>,
    /// Timeout.
    pub timeout: Option<Text>,
    /// Keep downloaded packages.
    pub keepcache: Option<Flag>,
    /// Send countme.
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

impl Params for YumRepositoryParams {
    fn check(&self) -> Result<(), String> {
        let absent = matches!(self.state, Some(Choice::Known(RepoState::Absent)));
        if !absent && self.baseurl.is_none() && self.mirrorlist.is_none() && self.metalink.is_none()
        {
            return Err("yum_repository needs baseurl, mirrorlist or metalink".into());
        }
        Ok(())
    }
}

/// `yum_repository`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "yum_repository",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    runs: Runs::Target,
    url_params: &["baseurl", "gpgkey"],
    normalize: super::normalize_with::<YumRepositoryParams>,
};
