//! `template`: the rendered template into the rootfs.

use std::path::Path;

use planner::modules::template::TemplateParams;
use planner::modules::types::Text;
use serde_json::Value as Json;

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::copy::{place, Placement};

/// `template` (the text was rendered by the planner, or by the executor when it used
/// build-time results).
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: TemplateParams = params(planner::modules::template::SPEC.name, args)?;
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
