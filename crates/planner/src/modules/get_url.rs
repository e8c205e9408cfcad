//! `get_url`: download a file through the site mirror into the rootfs.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Int, Mode, Text};

/// Parameters of `get_url`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GetUrlParams {
    /// http(s) URL.
    pub url: Text,
    /// Destination file (or directory) in the rootfs.
    pub dest: Text,
    /// `sha256:<hex>` (or another algorithm), or `sha256:<url of a checksum file>`.
    pub checksum: Option<Text>,
    /// Download even when `dest` exists.
    pub force: Option<Flag>,
    /// Mode.
    pub mode: Option<Mode>,
    /// Owner name or uid.
    pub owner: Option<Text>,
    /// Group name or gid.
    pub group: Option<Text>,
    /// Seconds before a request times out.
    pub timeout: Option<Int>,
    /// Extra request headers.
    pub headers: Option<serde_json::Map<String, serde_json::Value>>,
    /// HTTP basic-auth user.
    #[serde(alias = "username")]
    pub url_username: Option<Text>,
    /// HTTP basic-auth password (never printed).
    #[serde(alias = "password")]
    pub url_password: Option<Text>,
    /// Send basic auth before being asked.
    pub force_basic_auth: Option<Flag>,
    /// Verify TLS certificates.
    pub validate_certs: Option<Flag>,
    /// Use proxy environment variables.
    pub use_proxy: Option<Flag>,
    /// User-Agent.
    pub http_agent: Option<Text>,
    /// Keep a timestamped backup of a replaced file.
    pub backup: Option<Flag>,
    /// Temporary directory for the download.
    pub tmp_dest: Option<Text>,
    /// Decompress a gzip transfer encoding.
    pub decompress: Option<Flag>,
    /// Headers not to send on redirect.
    pub unredirected_headers: Option<Vec<Text>>,
    /// Use `~/.netrc`.
    pub use_netrc: Option<Flag>,
    /// Use GSSAPI.
    pub use_gssapi: Option<Flag>,
    /// TLS client certificate.
    pub client_cert: Option<Text>,
    /// TLS client key.
    pub client_key: Option<Text>,
    /// TLS ciphers.
    pub ciphers: Option<Vec<Text>>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
    /// Extended attributes.
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for GetUrlParams {
    fn check(&self) -> Result<(), String> {
        let url = self.url.as_str();
        let templated = crate::template::is_template(url);
        let allowed = templated
            || url.starts_with("http://")
            || url.starts_with("https://")
            || url.starts_with("file://");
        if !allowed {
            return Err(format!(
                "url '{url}' must start with http://, https:// or file://"
            ));
        }
        if let Some(checksum) = self.checksum.as_ref().map(|c| c.as_str()) {
            check_checksum(checksum)?;
        }
        Ok(())
    }
}

/// A checksum imgbuild can check: `sha256:<64 hex digits>` or `sha256:<URL of a checksum
/// file>` (a template is checked when it is rendered, at build time).
fn check_checksum(checksum: &str) -> Result<(), String> {
    if crate::template::is_template(checksum) {
        return Ok(());
    }
    let what = "write sha256:<64 hex digits> or sha256:<URL of a checksum file>";
    match checksum.split_once(':') {
        Some(("sha256", rest)) if rest.contains("://") => Ok(()),
        Some(("sha256", hex)) if hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit()) => {
            Ok(())
        }
        Some(("sha256", hex)) => Err(format!(
            "checksum '{checksum}': '{hex}' is not a sha256 (64 hex digits); {what}"
        )),
        Some((algorithm, _)) => Err(format!(
            "checksum '{checksum}': imgbuild checks downloads by sha256 only, not {algorithm}; {what}"
        )),
        None => Err(format!("checksum '{checksum}' names no algorithm; {what}")),
    }
}

/// `get_url`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "get_url",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["url"],
    normalize: super::spec::normalize_with::<GetUrlParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Url("url"),
    family: None,
    controller_folder: true,
    build_expressions: &[],
};
