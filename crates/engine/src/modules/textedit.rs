//! Editing text files of the image in place: `ini_file` (one option of an INI file),
//! `replace` (every match of an expression) and `patch` (a role's patch file, with `patch`).

use std::path::Path;

use planner::modules::ini_file::{IniFileParams, IniState};
use planner::modules::patch::PatchParams;
use planner::modules::replace::ReplaceParams;
use planner::modules::types::Choice;
use regex::Regex;
use serde_json::Value as Json;

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::attrs::{self, FileAttrs};
use super::lineinfile::{read_lines, write_lines};
use super::lineinfile_edit::python_backrefs;
use crate::rootfs::Kind;
use crate::target::Cmd;

fn section_name(line: &str) -> Option<&str> {
    let t = line.trim();
    t.strip_prefix('[')?.strip_suffix(']').map(str::trim)
}

fn option_of(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if t.starts_with(['#', ';', '[']) || t.is_empty() {
        return None;
    }
    let end = t.find(['=', ':']).unwrap_or(t.len());
    Some(t[..end].trim())
}

/// The edited lines of an INI file: `option` of `section` set to `line`, or removed.
pub fn edit_ini(
    lines: &[String],
    section: Option<&str>,
    option: Option<&str>,
    line: Option<&str>,
) -> Vec<String> {
    // The section's range: [start, end) where start is after its header (0 for no section).
    let (start, end) = match section {
        None => (
            0,
            lines
                .iter()
                .position(|l| section_name(l).is_some())
                .unwrap_or(lines.len()),
        ),
        Some(name) => match lines.iter().position(|l| section_name(l) == Some(name)) {
            Some(header) => {
                let end = lines[header + 1..]
                    .iter()
                    .position(|l| section_name(l).is_some())
                    .map_or(lines.len(), |i| header + 1 + i);
                (header + 1, end)
            }
            None => {
                // A new section goes at the end, right after the last line (as Ansible's
                // ini_file writes it: no blank line before it).
                let mut out = lines.to_vec();
                if let (Some(_), Some(line)) = (option, line) {
                    out.push(format!("[{name}]"));
                    out.push(line.to_owned());
                }
                return out;
            }
        },
    };
    let mut out = lines.to_vec();
    match (option, line) {
        (None, None) => {
            // Absent without option: the whole section goes.
            let header = start.saturating_sub(1);
            if section.is_some() {
                out.drain(header..end);
            }
        }
        (None, Some(_)) => {}
        (Some(option), Some(line)) => {
            match (start..end).find(|&i| option_of(&out[i]) == Some(option)) {
                Some(i) => out[i] = line.to_owned(),
                None => {
                    let last = (start..end).rev().find(|&i| !out[i].trim().is_empty());
                    let at = last.map_or(start, |i| i + 1);
                    out.insert(at, line.to_owned());
                }
            }
        }
        (Some(option), None) => {
            let mut i = start;
            let mut end = end;
            while i < end {
                if option_of(&out[i]) == Some(option) {
                    out.remove(i);
                    end -= 1;
                } else {
                    i += 1;
                }
            }
        }
    }
    out
}

/// `ini_file`.
pub fn ini_file(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: IniFileParams = params("ini_file", args)?;
    let path = Path::new(p.path.as_str());
    let existing = read_lines(ctx, path)?;
    if existing.is_none() && !flag(&p.create, true) {
        let mut error = ModuleError::new(format!("Destination {} does not exist!", path.display()));
        error.fields.insert("rc".into(), Json::from(257));
        return Err(error);
    }
    // A file ini_file creates starts as one empty line, as community.general's does: its
    // first section follows a blank line, a first sectionless option comes before one.
    let (lines, before) = existing.unwrap_or_else(|| (vec![String::new()], String::new()));
    let absent = matches!(p.state, Some(Choice::Known(IniState::Absent)));
    let option = p.option.as_ref().map(|o| o.as_str().trim());
    let line = match (absent, option, &p.value) {
        (true, _, _) => None,
        (false, Some(o), Some(v)) if flag(&p.no_extra_spaces, false) => {
            Some(format!("{o}={}", v.as_str()))
        }
        (false, Some(o), Some(v)) => Some(format!("{o} = {}", v.as_str())),
        (false, Some(o), None) if flag(&p.allow_no_value, false) => Some(o.to_owned()),
        (false, Some(o), None) => Some(format!("{o} = ")),
        (false, None, _) => Some(String::new()),
    };
    let section = p.section.as_ref().map(|s| s.as_str().trim());
    let mut after = edit_ini(&lines, section, option, line.as_deref());
    if !absent && option.is_none() {
        // A section alone.
        if let Some(name) = section {
            if !lines.iter().any(|l| section_name(l) == Some(name)) {
                after.push(format!("[{name}]"));
            }
        }
    }
    let attrs = FileAttrs::new(&p.mode, &p.owner, &p.group, &p.backup);
    let msg = ini_message(&lines, &after, section, option, absent);
    let mut result = write_lines(ctx, path, &before, &after, &attrs)?;
    result.msg = Some(msg.into());
    Ok(result)
}

/// The `msg` Ansible's ini_file gives for what the edit did.
fn ini_message(
    before: &[String],
    after: &[String],
    section: Option<&str>,
    option: Option<&str>,
    absent: bool,
) -> &'static str {
    let section_was_there =
        section.is_none_or(|s| before.iter().any(|l| section_name(l) == Some(s)));
    match () {
        _ if before == after => "OK",
        _ if absent && option.is_none() => "section removed",
        _ if absent => "option changed",
        _ if !section_was_there => "section and option added",
        _ if after.len() > before.len() => "option added",
        _ => "option changed",
    }
}

/// What `replace` does to a text.
#[derive(Debug, PartialEq)]
enum Replaced {
    /// `after`/`before` found no section: this pattern did not match.
    NoSection(String),
    /// The new text and how many matches were replaced.
    Done(String, usize),
}

/// Ansible's replace on `contents`: the section between `after` and `before` (Python's
/// `after(?P<subsection>.*?)before` with DOTALL, the section running to the end or from the
/// start when one is missing), and in it every match of `regexp` (MULTILINE) replaced.
fn replace_text(
    contents: &str,
    regexp: &str,
    replace: &str,
    after: Option<&str>,
    before: Option<&str>,
) -> Result<Replaced, ModuleError> {
    let compile = |pattern: &str| {
        Regex::new(pattern).map_err(|e| ModuleError::new(format!("regexp '{pattern}': {e}")))
    };
    let pattern = match (
        after.filter(|a| !a.is_empty()),
        before.filter(|b| !b.is_empty()),
    ) {
        (Some(a), Some(b)) => Some(format!("{a}(?P<subsection>.*?){b}")),
        (Some(a), None) => Some(format!("{a}(?P<subsection>.*)")),
        (None, Some(b)) => Some(format!("(?P<subsection>.*){b}")),
        (None, None) => None,
    };
    let (start, end) = match &pattern {
        None => (0, contents.len()),
        Some(pattern) => {
            let section = compile(&format!("(?s){pattern}"))?
                .captures(contents)
                .and_then(|c| c.name("subsection"))
                .map(|m| (m.start(), m.end()));
            match section {
                Some(range) => range,
                None => return Ok(Replaced::NoSection(pattern.clone())),
            }
        }
    };
    let re = compile(&format!("(?m){regexp}"))?;
    let section = &contents[start..end];
    let count = re.find_iter(section).count();
    let replaced = re.replace_all(section, python_backrefs(replace).as_str());
    let text = format!("{}{}{}", &contents[..start], replaced, &contents[end..]);
    Ok(Replaced::Done(text, count))
}

/// `replace`.
pub fn replace(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: ReplaceParams = params("replace", args)?;
    let path = Path::new(p.path.as_str());
    let fail = |rc: i64, msg: String| {
        let mut error = ModuleError::new(msg);
        error.fields.insert("rc".into(), Json::from(rc));
        error
    };
    if ctx
        .target
        .fs()
        .meta_follow(path)?
        .is_some_and(|m| m.kind == Kind::Dir)
    {
        return Err(fail(
            256,
            format!("Path {} is a directory !", path.display()),
        ));
    }
    let Some(before) = ctx.target.fs().read_text_opt(path)? else {
        return Err(fail(
            257,
            format!("Path {} does not exist !", path.display()),
        ));
    };
    let replaced = replace_text(
        &before,
        p.regexp.as_str(),
        p.replace.as_ref().map_or("", |r| r.as_str()),
        p.after.as_ref().map(|a| a.as_str()),
        p.before.as_ref().map(|b| b.as_str()),
    )?;
    let (after, count) = match replaced {
        Replaced::NoSection(pattern) => {
            let msg =
                format!("Pattern for before/after params did not match the given file: {pattern}");
            let mut result = ModuleResult::changed(false).with("msg", msg.as_str());
            result.msg = Some(msg);
            return Ok(result.with("rc", 0));
        }
        Replaced::Done(after, count) => (after, count),
    };
    let changed = count > 0 && after != before;
    let mut result = ModuleResult::changed(changed);
    let fs = ctx.target.fs();
    if changed {
        if ctx.diff {
            result.diff = Some((path.display().to_string(), before.clone(), after.clone()));
        }
        if !ctx.check {
            if flag(&p.backup, false) {
                let name = super::pathinfo::backup(fs, path)?;
                result.fields.insert("backup_file".into(), Json::from(name));
            }
            fs.write_atomic(path, after.as_bytes(), None)?;
        }
    }
    let attrs_changed = attrs::apply(fs, path, &p.owner, &p.group, &p.mode, ctx.check)?;
    // Ansible's check_file_attrs: a change of the file's attributes is said after the text's.
    let mut msg = if changed {
        format!("{count} replacements made")
    } else {
        String::new()
    };
    if attrs_changed {
        if changed {
            msg.push_str(" and ");
        }
        msg.push_str("ownership, perms or SE linux context changed");
    }
    result.changed |= attrs_changed;
    result.msg = (!msg.is_empty()).then(|| msg.clone());
    result.fields.insert("msg".into(), Json::from(msg));
    result.fields.insert("rc".into(), Json::from(0));
    Ok(result)
}

#[cfg(test)]
mod replace_tests {
    use super::{replace_text, Replaced};

    const TEXT: &str =
        "The quick brown fox.\nWe promptly judged.\nJinxed wizards quilt.\nJaded zombies.\n";

    #[test]
    fn before_and_after_out_of_order_match_no_section() {
        let out = replace_text(TEXT, "e", "3", Some("quilt"), Some("promptly")).expect("ok");
        assert_eq!(
            out,
            Replaced::NoSection("quilt(?P<subsection>.*?)promptly".into())
        );
    }

    #[test]
    fn only_the_section_is_replaced() {
        let out = replace_text(TEXT, "e", "3", Some("promptly"), Some("quilt")).expect("ok");
        let Replaced::Done(text, count) = out else {
            panic!("a section")
        };
        assert_eq!(count, 2);
        assert!(
            text.starts_with("The quick brown fox.\nWe promptly judg3d.\nJinx3d wizards quilt.")
        );
    }
}
/// `patch`: applied unless it already is (a reverse dry run succeeds).
pub fn patch(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: PatchParams = params("patch", args)?;
    let text = std::fs::read_to_string(ctx.local_path()?)
        .map_err(|e| ModuleError::new(format!("reading the patch {}: {e}", p.src.as_str())))?;
    let strip = p
        .strip
        .as_ref()
        .map_or("0", |s| s.as_str())
        .trim()
        .to_owned();
    let mut argv: Vec<String> = vec!["patch".into(), "--batch".into(), format!("-p{strip}")];
    if flag(&p.ignore_whitespace, false) {
        argv.push("--ignore-whitespace".into());
    }
    let cwd = p.basedir.as_ref().map(|b| b.as_str().to_owned());
    if let Some(dest) = &p.dest {
        argv.push(dest.as_str().to_owned());
    }
    let run = |extra: &[&str]| {
        let mut words = argv.clone();
        words.splice(1..1, extra.iter().map(|s| (*s).to_owned()));
        let mut cmd = Cmd::new(&words);
        cmd.stdin = Some(text.clone());
        cmd.cwd = cwd.clone();
        ctx.target.run(&cmd)
    };
    let applied = run(&["--reverse", "--dry-run", "--silent"])?;
    if applied.rc == 0 {
        return Ok(ModuleResult::changed(false));
    }
    let check = run(&["--forward", "--dry-run"])?;
    if check.rc != 0 {
        return Err(ModuleError::new(format!(
            "the patch {} does not apply: {}",
            p.src.as_str(),
            check.stdout.trim()
        )));
    }
    if !ctx.check {
        let out = run(&["--forward"])?;
        if out.rc != 0 {
            return Err(ModuleError::new(format!(
                "patch failed: {}",
                out.stdout.trim()
            )));
        }
    }
    Ok(ModuleResult::changed(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn ini_set_replace_add_and_remove() {
        let base = lines("top = 1\n[main]\ngpgcheck = 0\n\n[other]\nx = y");
        let set = edit_ini(&base, Some("main"), Some("gpgcheck"), Some("gpgcheck = 1"));
        assert_eq!(
            set.join("\n"),
            "top = 1\n[main]\ngpgcheck = 1\n\n[other]\nx = y"
        );
        let added = edit_ini(&base, Some("main"), Some("enabled"), Some("enabled = 1"));
        assert_eq!(
            added.join("\n"),
            "top = 1\n[main]\ngpgcheck = 0\nenabled = 1\n\n[other]\nx = y"
        );
        let new_section = edit_ini(&base, Some("new"), Some("a"), Some("a = b"));
        // Matched with Ansible's ini_file: a new section follows the last line directly.
        assert!(new_section.join("\n").ends_with("x = y\n[new]\na = b"));
        let removed = edit_ini(&base, Some("other"), Some("x"), None);
        assert_eq!(
            removed.join("\n"),
            "top = 1\n[main]\ngpgcheck = 0\n\n[other]"
        );
        let no_section = edit_ini(&base, None, Some("top"), Some("top = 2"));
        assert_eq!(no_section[0], "top = 2");
        let gone = edit_ini(&base, Some("other"), None, None);
        assert_eq!(gone.join("\n"), "top = 1\n[main]\ngpgcheck = 0\n");
    }
}
