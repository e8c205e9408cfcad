//! `deb822_repository`: a `.sources` file of apt.

use std::path::PathBuf;

use planner::modules::deb822_repository::{Deb822RepositoryParams, Deb822State};
use planner::modules::types::{Choice, TextList};
use serde_json::Value as Json;

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::repos::put;

/// A file name for a one-line source, as Ansible makes it from the URL.
/// `deb822_repository`: a `.sources` stanza.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: Deb822RepositoryParams = params(planner::modules::deb822_repository::SPEC.name, args)?;
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
