//! `blockinfile`: keep a marked block of lines in a file of the rootfs.
//!
//! A block of lines between marker lines in a rootfs file, edited as Ansible's
//! module edits it: on bytes, each line keeping its own ending (a CRLF line stays CRLF).

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::attrs;
use super::lineinfile::LineState;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Mode, Text};
use crate::rootfs::Kind;
use regex::bytes::Regex;
use serde_json::Value as Json;
use std::path::Path;

/// Parameters of `blockinfile`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BlockinfileParams {
    /// The file in the rootfs.
    #[serde(alias = "dest", alias = "destfile", alias = "name")]
    pub path: Text,
    /// The lines of the block.
    #[serde(alias = "content")]
    pub block: Option<Text>,
    /// Marker line template with `{mark}` (default `# {mark} ANSIBLE MANAGED BLOCK`).
    pub marker: Option<Text>,
    /// Word for `{mark}` at the start (default BEGIN).
    pub marker_begin: Option<Text>,
    /// Word for `{mark}` at the end (default END).
    pub marker_end: Option<Text>,
    /// Present or absent.
    pub state: Option<Choice<LineState>>,
    /// Insert after the last line matching this (or `EOF`).
    pub insertafter: Option<Text>,
    /// Insert before the last line matching this (or `BOF`).
    pub insertbefore: Option<Text>,
    /// Add a blank line before the block.
    pub prepend_newline: Option<Flag>,
    /// Add a blank line after the block.
    pub append_newline: Option<Flag>,
    /// Create the file if missing.
    pub create: Option<Flag>,
    /// Keep a timestamped backup.
    pub backup: Option<Flag>,
    /// Mode.
    pub mode: Option<Mode>,
    /// Owner name or uid.
    pub owner: Option<Text>,
    /// Group name or gid.
    pub group: Option<Text>,
    /// Command to validate the file before it is put in place.
    pub validate: Option<Text>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
    /// Extended attributes.
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for BlockinfileParams {
    fn check(&self) -> Result<(), String> {
        if self.insertafter.is_some() && self.insertbefore.is_some() {
            return Err("use insertafter or insertbefore, not both".into());
        }
        Ok(())
    }
}

/// `blockinfile`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "blockinfile",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<BlockinfileParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// Where a block goes when its markers are not in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place<'a> {
    /// After the last line matching (`insertafter`), or at the end.
    After(Option<&'a str>),
    /// Before the last line matching (`insertbefore`), or at the start.
    Before(Option<&'a str>),
}

/// What the block and its markers are.
struct Block<'a> {
    begin: Vec<u8>,
    end: Vec<u8>,
    /// The block's text; empty with `state: absent`.
    text: &'a str,
    place: Place<'a>,
}

/// Python's `bytes.splitlines(True)`: lines ending at `\n`, `\r\n` or a lone `\r`, each with
/// its ending.
fn split_lines(text: &[u8]) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < text.len() {
        let end = match text[i] {
            b'\n' => i + 1,
            b'\r' if text.get(i + 1) == Some(&b'\n') => i + 2,
            b'\r' => i + 1,
            _ => {
                i += 1;
                continue;
            }
        };
        lines.push(text[start..end].to_vec());
        start = end;
        i = end;
    }
    if start < text.len() {
        lines.push(text[start..].to_vec());
    }
    lines
}

/// Whether a Python pattern turns MULTILINE on with a leading inline flag (`(?m)`, `(?sm)`).
fn multiline(pattern: &str) -> bool {
    pattern
        .strip_prefix("(?")
        .and_then(|rest| rest.split_once(')'))
        .is_some_and(|(flags, _)| flags.chars().all(char::is_alphabetic) && flags.contains('m'))
}

/// The line index a new block goes at, as Ansible's module finds it.
fn insert_at(lines: &[Vec<u8>], original: &[u8], place: Place) -> Result<usize, ModuleError> {
    let (pattern, after) = match place {
        Place::After(None) => return Ok(lines.len()),
        Place::Before(None) => return Ok(0),
        Place::After(Some(p)) => (p, true),
        Place::Before(Some(p)) => (p, false),
    };
    let re = Regex::new(pattern)
        .map_err(|e| ModuleError::new(format!("bad regular expression {pattern:?}: {e}")))?;
    let found = if multiline(pattern) {
        re.find(original).map(|m| {
            let upto = if after { m.end() } else { m.start() };
            original[..upto].iter().filter(|b| **b == b'\n').count()
        })
    } else {
        lines.iter().rposition(|line| re.is_match(line))
    };
    Ok(match found {
        None => lines.len(),
        Some(n) if after => n + 1,
        Some(n) => n,
    })
}

/// The file's new bytes for `block`, from its old ones (none when it does not exist).
fn edit(original: Option<&[u8]>, block: &Block) -> Result<Vec<u8>, ModuleError> {
    let original = original.unwrap_or_default();
    let mut lines = split_lines(original);
    let marker0 = [block.begin.as_slice(), b"\n"].concat();
    let marker1 = [block.end.as_slice(), b"\n"].concat();
    let mut new = Vec::new();
    if !block.text.is_empty() {
        let mut text = block.text.as_bytes().to_vec();
        if !text.ends_with(b"\n") {
            text.push(b'\n');
        }
        new.push(marker0.clone());
        new.extend(split_lines(&text));
        new.push(marker1.clone());
    }
    let n0 = lines.iter().rposition(|l| *l == marker0);
    let n1 = lines.iter().rposition(|l| *l == marker1);
    let at = match (n0, n1) {
        (Some(n0), Some(n1)) => {
            let (from, to) = (n0.min(n1), n0.max(n1));
            lines.drain(from..=to);
            from
        }
        _ => insert_at(&lines, original, block.place)?,
    };
    // A line before the block gets an ending if it has none.
    if at > 0 && !lines[at - 1].ends_with(b"\n") {
        lines[at - 1].push(b'\n');
    }
    lines.splice(at..at, new);
    Ok(lines.concat())
}

/// The block the task asks for: its markers, its text (none when `state: absent`), its place.
fn block_of(p: &BlockinfileParams, present: bool) -> Block<'_> {
    let marker = p
        .marker
        .as_ref()
        .map_or("# {mark} ANSIBLE MANAGED BLOCK", |m| m.as_str());
    let mark = |m: &Option<crate::types::Text>, default: &str| {
        marker
            .replace("{mark}", m.as_ref().map_or(default, |t| t.as_str()))
            .into_bytes()
    };
    let place = match (&p.insertafter, &p.insertbefore) {
        (None, Some(b)) if b.as_str() == "BOF" => Place::Before(None),
        (None, Some(b)) => Place::Before(Some(b.as_str())),
        (Some(a), _) if a.as_str() != "EOF" => Place::After(Some(a.as_str())),
        _ => Place::After(None),
    };
    Block {
        begin: mark(&p.marker_begin, "BEGIN"),
        end: mark(&p.marker_end, "END"),
        text: if present {
            p.block.as_ref().map_or("", |b| b.as_str())
        } else {
            ""
        },
        place,
    }
}

/// `blockinfile`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: BlockinfileParams = params(SPEC.name, args)?;
    let path = Path::new(p.path.as_str());
    let fs = ctx.target.fs();
    let fail = |rc: i64, msg: String| {
        let mut error = ModuleError::new(msg);
        error.fields.insert("rc".into(), Json::from(rc));
        error
    };
    if fs.meta_follow(path)?.is_some_and(|m| m.kind == Kind::Dir) {
        return Err(fail(
            256,
            format!("Path {} is a directory !", path.display()),
        ));
    }
    let original = if fs.exists(path)? {
        Some(fs.read(path)?)
    } else {
        None
    };
    let present = !matches!(p.state, Some(Choice::Known(LineState::Absent)));
    if original.is_none() {
        if !flag(&p.create, false) {
            return Err(fail(
                257,
                format!("Path {} does not exist !", path.display()),
            ));
        }
        if !present {
            let msg = format!("File {} not present", path.display());
            let mut result = ModuleResult::changed(false).with("msg", msg.as_str());
            result.msg = Some(msg);
            return Ok(result);
        }
    }
    let block = block_of(&p, present);
    let after = edit(original.as_deref(), &block)?;
    let changed = original.as_deref() != Some(after.as_slice());
    let mut msg = match (changed, &original) {
        (false, _) => "",
        (true, None) => "File created",
        (true, Some(_)) if block.text.is_empty() => "Block removed",
        (true, Some(_)) => "Block inserted",
    }
    .to_owned();
    let mut result = ModuleResult::changed(changed);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let before = text(original.as_deref().unwrap_or_default());
    if changed && ctx.diff {
        result.diff = Some((path.display().to_string(), before.clone(), text(&after)));
    }
    let after_text = text(&after);
    let list = super::lineinfile::diff_list(path, &before, &after_text, ctx.diff);
    result.fields.insert("diff".into(), list);
    if changed && !ctx.check {
        if flag(&p.backup, false) && original.is_some() {
            let name = super::pathinfo::backup(fs, path)?;
            result.fields.insert("backup_file".into(), Json::from(name));
        }
        write(ctx, path, &after, p.validate.as_ref().map(|v| v.as_str()))?;
    }
    if ctx.check && original.is_none() {
        result.fields.insert("msg".into(), Json::from(msg));
        return Ok(result);
    }
    if attrs::apply(fs, path, &p.owner, &p.group, &p.mode, ctx.check)? {
        if changed {
            msg.push_str(" and ");
        }
        msg.push_str("ownership, perms or SE linux context changed");
        result.changed = true;
    }
    result.fields.insert("msg".into(), Json::from(msg));
    Ok(result)
}

/// Writes the new bytes, after `validate` (a command line with `%s` for a file holding them)
/// accepts them when given; missing parent folders are made first, as Ansible's module does.
fn write(
    ctx: &ModuleCtx,
    path: &Path,
    bytes: &[u8],
    validate: Option<&str>,
) -> Result<(), ModuleError> {
    let fs = ctx.target.fs();
    if let Some(check) = validate {
        super::lineinfile::validate(ctx, bytes, check)?;
    }
    if let Some(parent) = path.parent() {
        fs.mkdir_all(parent, 0o755)?;
    }
    fs.write_atomic(path, bytes, None)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block<'a>(text: &'a str, place: Place<'a>) -> Block<'a> {
        Block {
            begin: b"# BEGIN".to_vec(),
            end: b"# END".to_vec(),
            text,
            place,
        }
    }

    #[test]
    fn crlf_lines_keep_their_endings() {
        let old = b"unix\ndos\r\n# BEGIN\nold\r\n# END\nunix\n";
        let new = edit(Some(old), &block("dos\r\ndos\r\n", Place::After(None))).expect("edit");
        assert_eq!(
            new,
            b"unix\ndos\r\n# BEGIN\ndos\r\ndos\r\n# END\nunix\n".to_vec()
        );
    }

    #[test]
    fn a_new_block_goes_after_the_last_match_and_ends_the_line_before() {
        let old = b"a\nkey\nb\nkey";
        let new = edit(Some(old), &block("x", Place::After(Some("^key")))).expect("edit");
        assert_eq!(new, b"a\nkey\nb\nkey\n# BEGIN\nx\n# END\n".to_vec());
        let new = edit(Some(old), &block("x", Place::Before(None))).expect("edit");
        assert_eq!(new, b"# BEGIN\nx\n# END\na\nkey\nb\nkey".to_vec());
    }

    #[test]
    fn an_empty_block_removes_the_markers() {
        let old = b"a\n# BEGIN\nx\n# END\nb\n";
        let new = edit(Some(old), &block("", Place::After(None))).expect("edit");
        assert_eq!(new, b"a\nb\n".to_vec());
    }

    #[test]
    fn python_multiline_flag_is_seen() {
        assert!(multiline("(?m)^x$"));
        assert!(!multiline("^x$"));
    }
}
