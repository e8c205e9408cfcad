//! `known_hosts`: a host's key in an SSH known_hosts file of the image, looked up with the
//! image's `ssh-keygen` as Ansible's module does.

use serde::{Deserialize, Serialize};

use super::lineinfile::LineState;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text};

/// Parameters of `known_hosts`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KnownHostsParams {
    /// The host (one name; lower-cased as Ansible does).
    #[serde(alias = "host")]
    pub name: Text,
    /// The known_hosts line (`host keytype key`); needed unless state is absent.
    pub key: Option<Text>,
    /// The file (default `~/.ssh/known_hosts`).
    pub path: Option<Text>,
    /// Write the host hashed (`|1|salt|hash`).
    pub hash_host: Option<Flag>,
    /// Present or absent (default present).
    pub state: Option<Choice<LineState>>,
}

impl Params for KnownHostsParams {}

/// `known_hosts`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "known_hosts",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<KnownHostsParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
