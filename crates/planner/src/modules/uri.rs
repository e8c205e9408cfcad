//! `uri`: an HTTP request made by the build, its answer registered; the body written to a
//! file of the image with `dest`.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Int, Mode, Text};

crate::choices!(
    /// How `body` is sent.
    BodyFormat {
        Raw => "raw",
        Json => "json",
        FormUrlencoded => "form-urlencoded",
    }
);

crate::choices!(
    /// Which redirects are followed.
    FollowRedirects {
        Safe => "safe",
        All => "all" | "yes" | "urllib2",
        No => "no" | "none",
    }
);

/// Parameters of `uri`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UriParams {
    /// The http(s) URL.
    pub url: Text,
    /// The method (`GET` by default), one upper-case word.
    pub method: Option<Text>,
    /// The request body: text, or data sent as `body_format` says.
    pub body: Option<Json>,
    /// `raw` (default), `json` or `form-urlencoded`.
    pub body_format: Option<Choice<BodyFormat>>,
    /// Request headers.
    pub headers: Option<serde_json::Map<String, Json>>,
    /// The statuses that mean success (default 200): a number, a list, or `200,201`.
    pub status_code: Option<Json>,
    /// Register the body as `content`.
    pub return_content: Option<Flag>,
    /// Write the body to this file of the image (a folder: the file the server names).
    pub dest: Option<Text>,
    /// Skip the request when this file of the image exists.
    pub creates: Option<Text>,
    /// Skip the request unless this file of the image exists.
    pub removes: Option<Text>,
    /// `safe` (default: GET and HEAD only), `all`, `none`.
    pub follow_redirects: Option<Choice<FollowRedirects>>,
    /// Seconds for the whole request (default 30).
    pub timeout: Option<Int>,
    /// HTTP basic-auth user.
    #[serde(alias = "user")]
    pub url_username: Option<Text>,
    /// HTTP basic-auth password.
    #[serde(alias = "password")]
    pub url_password: Option<Text>,
    /// Send basic auth before being asked.
    pub force_basic_auth: Option<Flag>,
    /// User-Agent (default `ansible-httpget`).
    pub http_agent: Option<Text>,
    /// Verify TLS certificates (always done).
    pub validate_certs: Option<Flag>,
    /// Use proxy environment variables.
    pub use_proxy: Option<Flag>,
    /// Ignore a cached copy (there is none: every request is made).
    pub force: Option<Flag>,
    /// Decompress a gzip transfer encoding.
    pub decompress: Option<Flag>,
    /// Use `~/.netrc` (none in a build).
    pub use_netrc: Option<Flag>,
    /// Mode of `dest`.
    pub mode: Option<Mode>,
    /// Owner of `dest`.
    pub owner: Option<Text>,
    /// Group of `dest`.
    pub group: Option<Text>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
}

impl Params for UriParams {
    fn check(&self) -> Result<(), String> {
        let url = self.url.as_str();
        let templated = crate::template::is_template(url);
        if !templated && !url.starts_with("http://") && !url.starts_with("https://") {
            return Err(format!("url '{url}' must start with http:// or https://"));
        }
        if let Some(method) = &self.method {
            let method = method.as_str();
            let word = !method.is_empty() && method.chars().all(|c| c.is_ascii_uppercase());
            if !word && !crate::template::is_template(method) {
                return Err(
                    "Parameter 'method' needs to be a single word in uppercase, like GET or POST."
                        .into(),
                );
            }
        }
        if self.validate_certs.as_ref().is_some_and(|v| !v.or(true)) {
            return Err("validate_certs: false is not supported yet: imgbuild always verifies TLS certificates; give the site's CA to the build instead".into());
        }
        Ok(())
    }
}

/// `uri`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "uri",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<UriParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};
