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

fn compile(pattern: &str) -> Result<Regex, ModuleError> {
    Regex::new(pattern)
        .map_err(|e| ModuleError::new(format!("bad regular expression {pattern:?}: {e}")))
}

/// Index after which to insert (`None`: at the start), for insertafter/insertbefore.
pub fn insert_index(
    lines: &[String],
    after: Option<&str>,
    before: Option<&str>,
    firstmatch: bool,
) -> Result<usize, ModuleError> {
    let find = |pattern: &str| -> Result<Option<usize>, ModuleError> {
        let re = compile(pattern)?;
        let mut hits = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| re.is_match(l))
            .map(|(i, _)| i);
        Ok(if firstmatch {
            hits.next()
        } else {
            hits.next_back()
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

/// Writes lines back (with a final newline) if the text changed; returns the result.
pub fn write_lines(
    ctx: &ModuleCtx,
    path: &Path,
    before: &str,
    lines: &[String],
    attrs: &FileAttrs,
) -> Result<ModuleResult, ModuleError> {
    let (mode, p_owner, p_group) = (attrs.mode, attrs.owner, attrs.group);
    let mut after = lines.join("\n");
    // A file whose last line had no newline keeps it that way while that line stays last
    // (Ansible only adds one to a line it writes or to the line it appends after).
    let unterminated_last = !before.is_empty()
        && !before.ends_with('\n')
        && before.lines().last() == lines.last().map(String::as_str);
    if !lines.is_empty() && !unterminated_last {
        after.push('\n');
    }
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

/// A missing file without `create`: Ansible's lineinfile and blockinfile fail with rc 257.
pub fn missing_file(path: &Path) -> ModuleError {
    let mut error = ModuleError::new(format!(
        "{} does not exist; set create: yes to make it",
        path.display()
    ));
    error.fields.insert("rc".into(), Json::from(257));
    error
}

/// `lineinfile`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: LineinfileParams = params("lineinfile", args)?;
    let path = Path::new(p.path.as_str());
    let (mut lines, before) = match read_lines(ctx, path)? {
        Some(found) => found,
        None if flag(&p.create, false) => (Vec::new(), String::new()),
        None => return Err(missing_file(path)),
    };
    let absent = matches!(p.state, Some(Choice::Known(LineState::Absent)));
    let regexp = p.regexp.as_ref().map(|r| compile(r.as_str())).transpose()?;
    let search = p.search_string.as_ref().map(|s| s.to_string());
    let matches = |l: &str| match (&regexp, &search) {
        (Some(re), _) => re.is_match(l),
        (None, Some(s)) => l.contains(s.as_str()),
        (None, None) => false,
    };
    if absent {
        let line = p.line.as_ref().map(|l| l.to_string());
        lines.retain(|l| {
            !(matches(l)
                || (regexp.is_none() && search.is_none() && line.as_deref() == Some(l.as_str())))
        });
    } else {
        let line = p.line.as_ref().map(|l| l.to_string()).unwrap_or_default();
        let firstmatch = flag(&p.firstmatch, false);
        let hit = {
            let mut hits = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| matches(l))
                .map(|(i, _)| i);
            if firstmatch {
                hits.next()
            } else {
                hits.next_back()
            }
        };
        match hit {
            Some(i) => {
                let new = match (&regexp, flag(&p.backrefs, false)) {
                    (Some(re), true) => re
                        .replace(&lines[i], python_backrefs(&line).as_str())
                        .into_owned(),
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
    write_lines(ctx, path, &before, &lines, &attrs)
}

#[cfg(test)]
mod tests {
    use super::*;

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
