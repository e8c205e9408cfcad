//! `template`: render a Jinja template from the role's `templates/` into the rootfs.
//!
//! The rendered template into the rootfs.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::copy::{place, Placement};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Mode, Text};
use serde_json::Value as Json;
use std::path::Path;

/// Parameters of `template`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateParams {
    /// Template path, relative to the role's `templates/`.
    pub src: Text,
    /// Destination in the rootfs.
    pub dest: Text,
    /// Mode of the written file.
    pub mode: Option<Mode>,
    /// Owner name or uid.
    pub owner: Option<Text>,
    /// Group name or gid.
    pub group: Option<Text>,
    /// Replace an existing different file (default yes).
    pub force: Option<Flag>,
    /// Keep a timestamped backup of a replaced file.
    pub backup: Option<Flag>,
    /// Follow symlinks at the destination.
    pub follow: Option<Flag>,
    /// Command to validate the file before it is put in place.
    pub validate: Option<Text>,
    /// Line endings: `\n`, `\r`, `\r\n`.
    pub newline_sequence: Option<Text>,
    /// Remove the first newline after a block tag (default yes).
    pub trim_blocks: Option<Flag>,
    /// Strip whitespace before a block tag.
    pub lstrip_blocks: Option<Flag>,
    /// Other Jinja delimiters (`{%`, `%}`, `{{`, `}}`, `{#`, `#}`).
    pub block_start_string: Option<Text>,
    /// See `block_start_string`.
    pub block_end_string: Option<Text>,
    /// See `block_start_string`.
    pub variable_start_string: Option<Text>,
    /// See `block_start_string`.
    pub variable_end_string: Option<Text>,
    /// See `block_start_string`.
    pub comment_start_string: Option<Text>,
    /// See `block_start_string`.
    pub comment_end_string: Option<Text>,
    /// Output encoding (only utf-8 is written).
    pub output_encoding: Option<Text>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
    /// Extended attributes (`chattr` letters).
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for TemplateParams {}

/// The rendering options a `template` task's arguments set.
pub fn file_options(args: &serde_json::Value) -> ansible::template::FileOptions {
    let flag = |name: &str| {
        args.get(name)
            .and_then(|v| serde_json::from_value::<Flag>(v.clone()).ok())
            .and_then(|f| match f {
                Flag::Known(b) => Some(b),
                Flag::Deferred(_) => None,
            })
    };
    let delimiters = ansible::template::Delimiter::ALL
        .iter()
        .filter_map(|(which, option, _)| {
            let text = args.get(*option)?.as_str()?;
            Some((*which, text.to_owned()))
        })
        .collect();
    ansible::template::FileOptions {
        trim_blocks: flag("trim_blocks"),
        lstrip_blocks: flag("lstrip_blocks"),
        delimiters,
    }
}

/// `template`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "template",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<TemplateParams>,
    plan_time: PlanTime::RenderTemplate,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `template` (the text was rendered by the planner, or by the executor when it used
/// build-time results).
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: TemplateParams = params(SPEC.name, args)?;
    let text = ctx
        .rendered
        .ok_or_else(|| ModuleError::new("the template was not rendered"))?;
    let text = match p.newline_sequence.as_ref().map(Text::as_str) {
        Some("\\r\\n") | Some("\r\n") => text.replace('\n', "\r\n"),
        _ => text.to_owned(),
    };
    let how = Placement {
        bytes: text.as_bytes(),
        mode: &p.mode,
        owner: &p.owner,
        group: &p.group,
        force: flag(&p.force, true),
        validate: p.validate.as_ref().map(Text::as_str),
        backup: flag(&p.backup, false),
    };
    place(ctx, Path::new(p.dest.as_str()), &how)
}
