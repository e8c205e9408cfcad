//! `lineinfile`: one line present (replacing a matching one) or absent, in a rootfs file.

use std::path::Path;

use planner::modules::lineinfile::{LineState, LineinfileParams};
use planner::modules::types::{Choice, Mode};
use regex::Regex;
use serde_json::Value as Json;

use super::attrs::FileAttrs;
use super::{attrs, flag, params, pathinfo, ModuleCtx, ModuleError, ModuleResult};

/// Python's `\1` and `\g<name>` in a replacement, as the regex crate's `${1}`.
pub fn python_backrefs(template: &str) -> String {
    let re =
        Regex::new(r"\\(\d+)|\\g<(\w+)>|\$").unwrap_or_else(|_| unreachable!("a valid pattern"));
    re.replace_all(template, |c: &regex::Captures| match (c.get(1), c.get(2)) {
        (Some(n), _) | (None, Some(n)) => format!("${{{}}}", n.as_str()),
        _ => "$$".to_string(),
    })
    .into_owned()
}

/// A Python pattern, with the backreferences and look-around Python's `re` has.
fn compile(pattern: &str) -> Result<fancy_regex::Regex, ModuleError> {
    fancy_regex::Regex::new(pattern)
        .map_err(|e| ModuleError::new(format!("bad regular expression {pattern:?}: {e}")))
}

/// Whether `re` finds a match in `text` (Python's `search`).
fn search(re: &fancy_regex::Regex, text: &str) -> Result<bool, ModuleError> {
    re.is_match(text)
        .map_err(|e| ModuleError::new(format!("matching {:?}: {e}", re.as_str())))
}

/// The indexes of the lines `re` finds a match in.
fn matching_lines(re: &fancy_regex::Regex, lines: &[String]) -> Result<Vec<usize>, ModuleError> {
    let mut hits = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if search(re, line)? {
            hits.push(i);
        }
    }
    Ok(hits)
}

/// Index after which to insert (`None`: at the start), for insertafter/insertbefore.
pub fn insert_index(
    lines: &[String],
    after: Option<&str>,
    before: Option<&str>,
    firstmatch: bool,
) -> Result<usize, ModuleError> {
    let find = |pattern: &str| -> Result<Option<usize>, ModuleError> {
        let hits = matching_lines(&compile(pattern)?, lines)?;
        Ok(if firstmatch {
            hits.first().copied()
        } else {
            hits.last().copied()
        })
    };
    Ok(match (after, before) {
        (_, Some("BOF")) => 0,
        (_, Some(pattern)) => find(pattern)?.unwrap_or(lines.len()),
        (Some("EOF") | None, None) => lines.len(),
        (Some(pattern), None) => find(pattern)?.map(|i| i + 1).unwrap_or(lines.len()),
    })
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
    let argv = planner::shlex::split(&validate.replace("%s", &staged))
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
    let p: LineinfileParams = params("lineinfile", args)?;
    let path = Path::new(p.path.as_str());
    let absent = matches!(p.state, Some(Choice::Known(LineState::Absent)));
    let (mut lines, before) = match read_lines(ctx, path)? {
        Some(found) => found,
        None if absent => {
            let mut result = ModuleResult::changed(false).with("msg", "file not present");
            result.msg = Some("file not present".into());
            return Ok(result);
        }
        None if flag(&p.create, false) => (Vec::new(), String::new()),
        None => return Err(missing_file(path)),
    };
    let regexp = p.regexp.as_ref().map(|r| compile(r.as_str())).transpose()?;
    let search = p.search_string.as_ref().map(|s| s.to_string());
    let matched: Vec<bool> = match (&regexp, &search) {
        (Some(re), _) => {
            let hits = matching_lines(re, &lines)?;
            (0..lines.len()).map(|i| hits.contains(&i)).collect()
        }
        (None, Some(s)) => lines.iter().map(|l| l.contains(s.as_str())).collect(),
        (None, None) => vec![false; lines.len()],
    };
    if absent {
        let line = p.line.as_ref().map(|l| l.to_string());
        let mut index = 0..;
        lines.retain(|l| {
            let i = index.next().unwrap_or_default();
            !(matched[i]
                || (regexp.is_none() && search.is_none() && line.as_deref() == Some(l.as_str())))
        });
    } else {
        let line = p.line.as_ref().map(|l| l.to_string()).unwrap_or_default();
        let firstmatch = flag(&p.firstmatch, false);
        let hit = {
            let mut hits = (0..lines.len()).filter(|i| matched[*i]);
            if firstmatch {
                hits.next()
            } else {
                hits.next_back()
            }
        };
        match hit {
            Some(i) => {
                let new = match (&regexp, flag(&p.backrefs, false)) {
                    // Python's `match.expand`: the whole line is the template expanded.
                    (Some(re), true) => {
                        let mut new = String::new();
                        re.captures(lines[i].as_str())
                            .map_err(|e| ModuleError::new(format!("backrefs: {e}")))?
                            .ok_or_else(|| {
                                ModuleError::new("backrefs: the line no longer matches")
                            })?
                            .expand(&python_backrefs(&line), &mut new);
                        new
                    }
                    _ => line.clone(),
                };
                lines[i] = new;
            }
            None if flag(&p.backrefs, false) => {}
            None if lines.contains(&line) => {}
            None => {
                let at = insert_index(
                    &lines,
                    p.insertafter.as_ref().map(|t| t.as_str()),
                    p.insertbefore.as_ref().map(|t| t.as_str()),
                    firstmatch,
                )?;
                lines.insert(at, line);
            }
        }
    }
    let attrs = FileAttrs::new(&p.mode, &p.owner, &p.group, &p.backup);
    if let Some(check) = p.validate.as_ref().filter(|_| !ctx.check) {
        let after = joined(&before, &lines);
        if after != before {
            validate(ctx, after.as_bytes(), check.as_str())?;
        }
    }
    let mut result = write_lines(ctx, path, &before, &lines, &attrs)?;
    let after = result
        .diff
        .as_ref()
        .map_or(before.as_str(), |d| d.2.as_str());
    let list = diff_list(path, &before, after, ctx.diff);
    result.fields.insert("diff".into(), list);
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_patterns_with_backreferences_and_lookaround_match() {
        let lines = vec!["REF x REF".to_owned(), "REF x FER".to_owned()];
        let re = compile(r"^(REF) .* \1$").expect("a backreference");
        assert_eq!(matching_lines(&re, &lines).expect("matches"), vec![0]);
        let re = compile(r"^REF(?= x F)").expect("a lookahead");
        assert_eq!(matching_lines(&re, &lines).expect("matches"), vec![1]);
    }

    #[test]
    fn backrefs() {
        assert_eq!(python_backrefs(r"\1=\g<v> $x"), "${1}=${v} $$x");
    }

    #[test]
    fn insertion_points() {
        let lines: Vec<String> = ["a", "b", "a"].iter().map(|s| s.to_string()).collect();
        assert_eq!(insert_index(&lines, None, None, false).expect("eof"), 3);
        assert_eq!(
            insert_index(&lines, Some("^a"), None, false).expect("after last a"),
            3
        );
        assert_eq!(
            insert_index(&lines, Some("^a"), None, true).expect("after first a"),
            1
        );
        assert_eq!(
            insert_index(&lines, None, Some("BOF"), false).expect("bof"),
            0
        );
        assert_eq!(
            insert_index(&lines, None, Some("^b"), false).expect("before b"),
            1
        );
        assert_eq!(
            insert_index(&lines, Some("^zzz"), None, false).expect("no match"),
            3
        );
    }
}
