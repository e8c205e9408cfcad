//! `deb822_repository`: a `.sources` file (deb822 form) in the image's
//! `/etc/apt/sources.list.d/`.
//!
//! A `.sources` file of apt.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::repos::put;
use super::spec::{Downloads, FreeForm, ModuleSpec, PackageFamily, Params, PlanTime};
use super::types::{Choice, Flag, Mode, Text, TextList};
use serde_json::Value as Json;
use std::path::PathBuf;

crate::choices!(
    /// There or not.
    Deb822State { Present => "present", Absent => "absent" }
);

/// Parameters of `deb822_repository`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Deb822RepositoryParams {
    /// The file name without `.sources`.
    pub name: Text,
    /// `deb`, `deb-src`.
    pub types: Option<TextList>,
    /// Archive URLs.
    pub uris: Option<TextList>,
    /// Suites.
    pub suites: Option<TextList>,
    /// Components.
    pub components: Option<TextList>,
    /// The key file (`Signed-By`).
    pub signed_by: Option<Text>,
    /// Architectures.
    pub architectures: Option<TextList>,
    /// Enabled.
    pub enabled: Option<Flag>,
    /// Trusted.
    pub trusted: Option<Flag>,
    /// Present or absent.
    pub state: Option<Choice<Deb822State>>,
    /// Mode.
    pub mode: Option<Mode>,
}

impl Params for Deb822RepositoryParams {
    fn check(&self) -> Result<(), String> {
        let absent = matches!(self.state, Some(Choice::Known(Deb822State::Absent)));
        if !absent && (self.uris.is_none() || self.suites.is_none()) {
            return Err("deb822_repository needs uris and suites".into());
        }
        Ok(())
    }
}

/// `deb822_repository`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "deb822_repository",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &["uris"],
    normalize: super::spec::normalize_with::<Deb822RepositoryParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: Some(PackageFamily::Apt),
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// A file name for a one-line source, as Ansible makes it from the URL.
/// `deb822_repository`: a `.sources` stanza.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: Deb822RepositoryParams = params(SPEC.name, args)?;
    let name = p.name.as_str().trim();
    let path = PathBuf::from(format!("/etc/apt/sources.list.d/{name}.sources"));
    if matches!(p.state, Some(Choice::Known(Deb822State::Absent))) {
        return put(ctx, &path, None);
    }
    let mut lines = Vec::new();
    let mut field = |k: &str, v: Option<String>| {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            lines.push(format!("{k}: {v}"));
        }
    };
    field("X-Repolib-Name", Some(name.to_owned()));
    field("Types", list(&p.types, " ").or(Some("deb".into())));
    field("URIs", list(&p.uris, " "));
    field("Suites", list(&p.suites, " "));
    field("Components", list(&p.components, " "));
    field("Architectures", list(&p.architectures, " "));
    field(
        "Signed-By",
        p.signed_by.as_ref().map(|t| t.as_str().trim().to_owned()),
    );
    field(
        "Enabled",
        p.enabled.as_ref().map(|f| {
            if f.or(true) {
                "yes".into()
            } else {
                "no".into()
            }
        }),
    );
    field(
        "Trusted",
        p.trusted.as_ref().map(|f| {
            if f.or(false) {
                "yes".into()
            } else {
                "no".into()
            }
        }),
    );
    put(ctx, &path, Some(&(lines.join("\n") + "\n")))
}

fn list(v: &Option<TextList>, sep: &str) -> Option<String> {
    v.as_ref().map(|l| l.0.join(sep))
}
