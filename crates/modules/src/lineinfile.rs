//! `lineinfile`: make sure one line is (or is not) in a file of the rootfs.
//!
//! One line present (replacing a matching one) or absent, in a rootfs file.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::attrs::FileAttrs;
use super::lineinfile_edit as edit;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Mode, Text};
use super::{attrs, pathinfo};
use serde_json::Value as Json;
use std::path::Path;

crate::choices!(
    /// Whether the line should be there.
    LineState { Present => "present", Absent => "absent" }
);

/// Parameters of `lineinfile`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LineinfileParams {
    /// The file in the rootfs.
    #[serde(alias = "dest", alias = "destfile", alias = "name")]
    pub path: Text,
    /// The line.
    #[serde(alias = "value")]
    pub line: Option<Text>,
    /// Regular expression of the line to replace or remove.
    #[serde(alias = "regex")]
    pub regexp: Option<Text>,
    /// Literal text of the line to replace or remove.
    pub search_string: Option<Text>,
    /// Present or absent.
    pub state: Option<Choice<LineState>>,
    /// Insert after the last line matching this (or `EOF`).
    pub insertafter: Option<Text>,
    /// Insert before the last line matching this (or `BOF`).
    pub insertbefore: Option<Text>,
    /// Use backreferences of `regexp` in `line`; do nothing when it does not match.
    pub backrefs: Option<Flag>,
    /// Anchor at the first match of insertafter/insertbefore.
    pub firstmatch: Option<Flag>,
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

impl Params for LineinfileParams {
    fn check(&self) -> Result<(), String> {
        let absent = matches!(self.state, Some(Choice::Known(LineState::Absent)));
        if !absent && self.line.is_none() {
            return Err("state=present needs line".into());
        }
        if self.insertafter.is_some() && self.insertbefore.is_some() {
            return Err("use insertafter or insertbefore, not both".into());
        }
        if self.backrefs.as_ref().is_some_and(|b| b.or(false)) && self.regexp.is_none() {
            return Err("backrefs needs regexp".into());
        }
        for (name, pattern) in [
            ("regexp", &self.regexp),
            ("insertafter", &self.insertafter),
            ("insertbefore", &self.insertbefore),
        ] {
            if let Some(pattern) = pattern.as_ref().map(|p| p.as_str()) {
                super::spec::check_python_regex(name, pattern)?;
            }
        }
        Ok(())
    }
}

/// `lineinfile`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "lineinfile",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<LineinfileParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// A Python pattern, with the backreferences and look-around Python's `re` has.
fn compile(pattern: &str) -> Result<fancy_regex::Regex, ModuleError> {
    fancy_regex::Regex::new(pattern)
        .map_err(|e| ModuleError::new(format!("bad regular expression {pattern:?}: {e}")))
}

/// Reads a text file as lines; `None` when missing.
pub fn read_lines(
    ctx: &ModuleCtx,
    path: &Path,
) -> Result<Option<(Vec<String>, String)>, ModuleError> {
    Ok(ctx
        .target
        .fs()
        .read_text_opt(path)?
        .map(|text| (text.lines().map(str::to_owned).collect(), text)))
}

/// The text of `lines` written back over `before`: a file whose last line had no newline keeps
/// it that way while that line stays last (Ansible only adds one to a line it writes or to the
/// line it appends after).
pub fn joined(before: &str, lines: &[String]) -> String {
    let mut after = lines.join("\n");
    let unterminated_last = !before.is_empty()
        && !before.ends_with('\n')
        && before.lines().last() == lines.last().map(String::as_str);
    if !lines.is_empty() && !unterminated_last {
        after.push('\n');
    }
    after
}

/// Runs `validate` (a command line with `%s` for a file holding the new text) as Ansible's
/// file-editing modules do before they write; fails in their words.
pub fn validate(ctx: &ModuleCtx, bytes: &[u8], validate: &str) -> Result<(), ModuleError> {
    if !validate.contains("%s") {
        return Err(ModuleError::new(format!(
            "validate must contain %s: {validate}"
        )));
    }
    let fs = ctx.target.fs();
    let staged = format!("/tmp/.imgbuild-validate-{}", std::process::id());
    fs.write_atomic(Path::new(&staged), bytes, Some(0o600))?;
    let argv = ansible::shlex::split(&validate.replace("%s", &staged))
        .map_err(|e| ModuleError::new(e.to_string()));
    let out = argv.and_then(|argv| {
        let cmd = crate::target::Cmd {
            env: ctx.env.to_vec(),
            ..crate::target::Cmd::new(&argv)
        };
        Ok(ctx.target.run(&cmd)?)
    });
    fs.remove_all(Path::new(&staged))?;
    let out = out?;
    if out.rc != 0 {
        return Err(ModuleError::new(format!(
            "failed to validate: rc:{} error:{}",
            out.rc, out.stderr
        )));
    }
    Ok(())
}

/// Writes lines back (with a final newline) if the text changed; returns the result.
pub fn write_lines(
    ctx: &ModuleCtx,
    path: &Path,
    before: &str,
    lines: &[String],
    attrs: &FileAttrs,
) -> Result<ModuleResult, ModuleError> {
    let (mode, p_owner, p_group) = (attrs.mode, attrs.owner, attrs.group);
    let after = joined(before, lines);
    let mut result = ModuleResult::default();
    if after != before {
        result.changed = true;
        if ctx.diff {
            result.diff = Some((path.display().to_string(), before.to_owned(), after.clone()));
        }
        if !ctx.check {
            if attrs.backup && !before.is_empty() {
                let name = pathinfo::backup(ctx.target.fs(), path)?;
                result.fields.insert("backup_file".into(), Json::from(name));
            }
            let bits = match mode {
                Some(Mode::Octal(bits)) => Some(*bits),
                _ => None,
            };
            // `create: yes` makes missing parent folders too, as Ansible's os.makedirs does.
            if let Some(parent) = path.parent() {
                ctx.target.fs().mkdir_all(parent, 0o755)?;
            }
            ctx.target.fs().write_atomic(path, after.as_bytes(), bits)?;
        }
    }
    if !ctx.check || ctx.target.fs().exists(path)? {
        result.changed |= attrs::apply(ctx.target.fs(), path, p_owner, p_group, mode, ctx.check)?;
    }
    Ok(result)
}

/// The diff list Ansible's lineinfile and blockinfile return whether or not diff mode shows it
/// (the texts only in diff mode): the content's, then the file attributes'.
pub fn diff_list(path: &Path, before: &str, after: &str, diff: bool) -> Json {
    let header = |what: &str| format!("{} ({what})", path.display());
    let (before, after) = if diff { (before, after) } else { ("", "") };
    serde_json::json!([
        {"before": before, "after": after,
         "before_header": header("content"), "after_header": header("content")},
        {"before_header": header("file attributes"), "after_header": header("file attributes")},
    ])
}

/// A missing file without `create`: Ansible's lineinfile fails with rc 257.
pub fn missing_file(path: &Path) -> ModuleError {
    let mut error = ModuleError::new(format!("Destination {} does not exist !", path.display()));
    error.fields.insert("rc".into(), Json::from(257));
    error
}

/// `lineinfile`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: LineinfileParams = params(SPEC.name, args)?;
    let path = Path::new(p.path.as_str());
    let fs = ctx.target.fs();
    let absent = matches!(p.state, Some(Choice::Known(LineState::Absent)));
    let warnings = empty_pattern_warning(&p);
    if fs
        .meta_follow(path)?
        .is_some_and(|m| m.kind == crate::rootfs::Kind::Dir)
    {
        let mut error = ModuleError::new(format!("Path {} is a directory !", path.display()));
        error.fields.insert("rc".into(), Json::from(256));
        return Err(error);
    }
    let existing = fs.read_text_opt(path)?;
    match &existing {
        None if absent => {
            let mut result = ModuleResult::changed(false).with("msg", "file not present");
            result.msg = Some("file not present".into());
            return Ok(result);
        }
        None if !flag(&p.create, false) => return Err(missing_file(path)),
        _ => {}
    }
    let before = existing.clone().unwrap_or_default();
    let mut lines = edit::read_lines(&before);
    let (mut msg, mut changed, found) = edit_lines(&p, &mut lines, absent)?;
    let after = lines.concat();
    let mut result = ModuleResult::default();
    if changed && ctx.diff {
        result.diff = Some((path.display().to_string(), before.clone(), after.clone()));
    }
    let backup = if changed && !ctx.check {
        write(ctx, &p, path, existing.is_some(), &after)?
    } else {
        String::new()
    };
    let attrs_apply = !(ctx.check && existing.is_none());
    if attrs_apply && attrs::apply(fs, path, &p.owner, &p.group, &p.mode, ctx.check)? {
        if changed {
            msg.push_str(" and ");
        }
        msg.push_str("ownership, perms or SE linux context changed");
        changed = true;
    }
    result.changed = changed;
    result.msg = (!msg.is_empty()).then(|| msg.clone());
    result.fields.insert("msg".into(), Json::from(msg));
    result.fields.insert("backup".into(), Json::from(backup));
    if let Some(found) = found {
        result.fields.insert("found".into(), Json::from(found));
    }
    let list = diff_list(path, &before, &after, ctx.diff);
    result.fields.insert("diff".into(), list);
    if !warnings.is_empty() {
        result
            .fields
            .insert("warnings".into(), Json::from(warnings));
    }
    Ok(result)
}

/// Edits the file's lines as the task says (the line present, or absent); the message, whether
/// a line changed, and for `absent` how many lines were found.
fn edit_lines(
    p: &LineinfileParams,
    lines: &mut Vec<String>,
    absent: bool,
) -> Result<(String, bool, Option<usize>), ModuleError> {
    let regexp = p.regexp.as_ref().map(|r| compile(r.as_str())).transpose()?;
    let search = p.search_string.as_ref().map(|s| s.as_str());
    let line = p.line.as_ref().map_or("", |l| l.as_str());
    if absent {
        let removed = edit::absent(lines, regexp.as_ref(), search, line)?;
        let msg = if removed > 0 {
            format!("{removed} line(s) removed")
        } else {
            String::new()
        };
        Ok((msg, removed > 0, Some(removed)))
    } else {
        let edit = edit::Present {
            regexp: regexp.as_ref(),
            search,
            line,
            insertafter: p.insertafter.as_ref().map(|t| t.as_str()),
            insertbefore: p.insertbefore.as_ref().map(|t| t.as_str()),
            backrefs: flag(&p.backrefs, false),
            firstmatch: flag(&p.firstmatch, false),
        };
        let (msg, changed) = edit::present(lines, &edit)?;
        Ok((msg, changed, None))
    }
}

/// Writes the edited text after `validate` accepts it, backing the old file up first when
/// asked; missing parent folders are made. The backup's name, or "".
fn write(
    ctx: &ModuleCtx,
    p: &LineinfileParams,
    path: &Path,
    existed: bool,
    after: &str,
) -> Result<String, ModuleError> {
    let fs = ctx.target.fs();
    if let Some(check) = &p.validate {
        validate(ctx, after.as_bytes(), check.as_str())?;
    }
    let backup = if flag(&p.backup, false) && existed {
        pathinfo::backup(fs, path)?
    } else {
        String::new()
    };
    if let Some(parent) = path.parent() {
        fs.mkdir_all(parent, 0o755)?;
    }
    fs.write_atomic(path, after.as_bytes(), None)?;
    Ok(backup)
}

/// Ansible's warning for an empty regexp or search_string, which matches every line.
fn empty_pattern_warning(p: &LineinfileParams) -> Vec<String> {
    let empty = |t: &Option<crate::types::Text>| t.as_ref().is_some_and(|t| t.as_str().is_empty());
    let name = match (empty(&p.regexp), empty(&p.search_string)) {
        (true, _) => "regular expression",
        (false, true) => "search string",
        _ => return Vec::new(),
    };
    let mut msg = format!("The {name} is an empty string, which will match every line in the file. This may have unintended consequences, such as replacing the last line in the file rather than appending.");
    if name == "regular expression" {
        msg.push_str(
            " If this is desired, use '^' to match every line in the file and avoid this warning.",
        );
    }
    vec![msg]
}
