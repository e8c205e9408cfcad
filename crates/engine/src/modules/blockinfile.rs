//! `blockinfile`: a block of lines between marker lines in a rootfs file.

use std::path::Path;

use planner::modules::blockinfile::BlockinfileParams;
use planner::modules::lineinfile::LineState;
use planner::modules::types::Choice;
use serde_json::Value as Json;

use super::attrs::FileAttrs;
use super::lineinfile::{insert_index, missing_file, read_lines, write_lines};
use super::{flag, params, ModuleCtx, ModuleError, ModuleResult};

/// `blockinfile`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: BlockinfileParams = params("blockinfile", args)?;
    let path = Path::new(p.path.as_str());
    let (mut lines, before, existed) = match read_lines(ctx, path)? {
        Some((lines, before)) => (lines, before, true),
        None if flag(&p.create, false) => (Vec::new(), String::new(), false),
        None => return Err(missing_file(path)),
    };
    let original = lines.clone();
    let marker = p
        .marker
        .as_ref()
        .map(|m| m.to_string())
        .unwrap_or_else(|| "# {mark} ANSIBLE MANAGED BLOCK".into());
    let begin = marker.replace(
        "{mark}",
        p.marker_begin
            .as_ref()
            .map(|m| m.as_str())
            .unwrap_or("BEGIN"),
    );
    let end = marker.replace(
        "{mark}",
        p.marker_end.as_ref().map(|m| m.as_str()).unwrap_or("END"),
    );
    let start = lines.iter().position(|l| *l == begin);
    let stop = start.and_then(|s| lines[s..].iter().position(|l| *l == end).map(|e| s + e));
    let block: Vec<String> = p
        .block
        .as_ref()
        .map(|b| b.as_str().lines().map(str::to_owned).collect())
        .unwrap_or_default();
    let absent = matches!(p.state, Some(Choice::Known(LineState::Absent))) || block.is_empty();
    let at = match (start, stop) {
        (Some(s), Some(e)) => {
            lines.drain(s..=e);
            s
        }
        _ => insert_index(
            &lines,
            p.insertafter.as_ref().map(|t| t.as_str()),
            p.insertbefore.as_ref().map(|t| t.as_str()),
            false,
        )?,
    };
    if !absent {
        let mut new = vec![begin];
        new.extend(block);
        new.push(end);
        lines.splice(at..at, new);
    }
    let attrs = FileAttrs::new(&p.mode, &p.owner, &p.group, &p.backup);
    let mut result = write_lines(ctx, path, &before, &lines, &attrs)?;
    // Ansible's message of what changed.
    let content = lines != original;
    let msg = match (content, existed, absent) {
        (false, _, _) if result.changed => "ownership, perms or SE linux context changed",
        (false, _, _) => "",
        (true, false, _) => "File created",
        (true, true, true) => "Block removed",
        (true, true, false) => "Block inserted",
    };
    result.fields.insert("msg".into(), Json::from(msg));
    Ok(result)
}
