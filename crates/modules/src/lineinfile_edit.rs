//! The text edits of `lineinfile`, as ansible-core 2.14's module makes them: on the file's lines
//! as Python's `readlines()` gives them (each with its `\n`), with its messages.

use fancy_regex::Regex;

use super::api::ModuleError;

/// Python's `\1` and `\g<name>` in a replacement, as the regex crate's `${1}`.
pub fn python_backrefs(template: &str) -> String {
    let re = regex::Regex::new(r"\\(\d+)|\\g<(\w+)>|\$")
        .unwrap_or_else(|_| unreachable!("a valid pattern"));
    re.replace_all(template, |c: &regex::Captures| match (c.get(1), c.get(2)) {
        (Some(n), _) | (None, Some(n)) => format!("${{{}}}", n.as_str()),
        _ => "$$".to_string(),
    })
    .into_owned()
}

/// What a `state: present` edit looks for and where it puts the line.
pub struct Present<'a> {
    /// `regexp`, compiled.
    pub regexp: Option<&'a Regex>,
    /// `search_string`.
    pub search: Option<&'a str>,
    /// `line`.
    pub line: &'a str,
    /// `insertafter`.
    pub insertafter: Option<&'a str>,
    /// `insertbefore`.
    pub insertbefore: Option<&'a str>,
    /// `backrefs`.
    pub backrefs: bool,
    /// `firstmatch`.
    pub firstmatch: bool,
}

/// Python's `readlines()`: lines ending at `\n`, each with it.
pub fn read_lines(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_owned).collect()
}

fn search(re: &Regex, line: &str) -> Result<bool, ModuleError> {
    // Python's `$` also matches before a final newline: search the line without it.
    let text = line.strip_suffix('\n').unwrap_or(line);
    re.is_match(text)
        .map_err(|e| ModuleError::new(format!("matching {:?}: {e}", re.as_str())))
}

fn bare(line: &str) -> &str {
    line.trim_end_matches(['\r', '\n'])
}

fn ends_line(line: &str) -> bool {
    line.ends_with('\n') || line.ends_with('\r')
}

/// What the module's scan of the lines finds.
struct Scan {
    /// The line a regexp or search_string matches, else one equal to `line`.
    found: Option<usize>,
    /// Where a line inserted after or before a pattern goes.
    insert_at: Option<usize>,
    /// `line` expanded from the regexp's match (backrefs).
    expanded: Option<String>,
}

/// The line a regexp or search_string matches (else one equal to `line`) and where an insertion
/// goes, as the module's scan finds them; with the regexp's expansion of `line` (backrefs).
fn scan(lines: &[String], p: &Present, insert_re: Option<&Regex>) -> Result<Scan, ModuleError> {
    let (mut found, mut matched, mut expanded) = (None, false, None);
    for (n, cur) in lines.iter().enumerate() {
        let hit = match (p.regexp, p.search) {
            (Some(re), _) => search(re, cur)?,
            (None, Some(s)) => cur.contains(s),
            (None, None) => break,
        };
        if hit {
            found = Some(n);
            matched = true;
            if let (Some(re), true) = (p.regexp, p.backrefs) {
                let text = cur.strip_suffix('\n').unwrap_or(cur);
                let mut out = String::new();
                if let Ok(Some(caps)) = re.captures(text) {
                    caps.expand(&python_backrefs(p.line), &mut out);
                }
                expanded = Some(out);
            }
            if p.firstmatch {
                break;
            }
        }
    }
    let mut insert_at = None;
    if !matched {
        for (n, cur) in lines.iter().enumerate() {
            if p.line == bare(cur) {
                found = Some(n);
            } else if let Some(re) = insert_re {
                if search(re, cur)? {
                    insert_at = Some(if p.insertafter.is_some() { n + 1 } else { n });
                    if p.firstmatch {
                        break;
                    }
                }
            }
        }
    }
    Ok(Scan {
        found,
        insert_at,
        expanded,
    })
}

/// Inserts `line` at `at` unless the line beside it already is `line`: after a match, the
/// line at `at` (the last line when `at` is the end); before one, the line before `at` (the
/// first when `at` is 0). Returns whether it did.
fn insert_unless_beside(lines: &mut Vec<String>, at: usize, line: &str, before: bool) -> bool {
    let beside = if before || at == lines.len() {
        lines.get(at.saturating_sub(1))
    } else {
        lines.get(at)
    };
    if beside.is_some_and(|l| bare(l) == line) {
        return false;
    }
    lines.insert(at, format!("{line}\n"));
    true
}

/// `state: present` on `lines`: the message and whether anything changed.
pub fn present(lines: &mut Vec<String>, p: &Present) -> Result<(String, bool), ModuleError> {
    let compile = |pattern: &str| {
        Regex::new(pattern)
            .map_err(|e| ModuleError::new(format!("bad regular expression {pattern:?}: {e}")))
    };
    let insert_re = match (p.insertafter, p.insertbefore) {
        (Some(a), _) if a != "BOF" && a != "EOF" => Some(compile(a)?),
        (None, Some(b)) if b != "BOF" => Some(compile(b)?),
        _ => None,
    };
    let Scan {
        found,
        insert_at,
        expanded,
    } = scan(lines, p, insert_re.as_ref())?;
    let added = |changed: bool| {
        (
            (if changed { "line added" } else { "" }).to_owned(),
            changed,
        )
    };
    if let Some(index) = found {
        let mut new = expanded.unwrap_or_else(|| p.line.to_owned());
        if !new.ends_with('\n') {
            new.push('\n');
        }
        if lines[index] != new {
            lines[index] = new;
            return Ok(("line replaced".into(), true));
        }
        return Ok((String::new(), false));
    }
    if p.backrefs {
        return Ok((String::new(), false));
    }
    if p.insertbefore == Some("BOF") || p.insertafter == Some("BOF") {
        lines.insert(0, format!("{}\n", p.line));
        return Ok(added(true));
    }
    match insert_at {
        Some(at) if p.insertafter.is_some_and(|a| a != "EOF") => {
            Ok(added(insert_unless_beside(lines, at, p.line, false)))
        }
        Some(at) if p.insertafter.is_none() => {
            lines.insert(at, format!("{}\n", p.line));
            Ok(added(true))
        }
        _ => {
            if lines.last().is_some_and(|l| !ends_line(l)) {
                lines.push("\n".into());
            }
            lines.push(format!("{}\n", p.line));
            Ok(added(true))
        }
    }
}

/// `state: absent` on `lines`: how many lines went.
pub fn absent(
    lines: &mut Vec<String>,
    regexp: Option<&Regex>,
    search_string: Option<&str>,
    line: &str,
) -> Result<usize, ModuleError> {
    let mut kept = Vec::with_capacity(lines.len());
    let mut removed = 0;
    for cur in lines.drain(..) {
        let hit = match (regexp, search_string) {
            (Some(re), _) => search(re, &cur)?,
            (None, Some(s)) => cur.contains(s),
            (None, None) => bare(&cur) == line,
        };
        if hit {
            removed += 1;
        } else {
            kept.push(cur);
        }
    }
    *lines = kept;
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backrefs() {
        assert_eq!(python_backrefs(r"\1=\g<v> $x"), "${1}=${v} $$x");
    }

    fn present_on(text: &str, p: &Present) -> (String, String, bool) {
        let mut lines = read_lines(text);
        let (msg, changed) = present(&mut lines, p).expect("edit");
        (lines.concat(), msg, changed)
    }

    fn plain(line: &str) -> Present<'_> {
        Present {
            regexp: None,
            search: None,
            line,
            insertafter: None,
            insertbefore: None,
            backrefs: false,
            firstmatch: false,
        }
    }

    #[test]
    fn a_missing_line_is_added_at_the_end_after_a_newline() {
        let (text, msg, changed) = present_on("a\nb", &plain("c"));
        assert_eq!(
            (text.as_str(), msg.as_str(), changed),
            ("a\nb\nc\n", "line added", true)
        );
        let (_, msg, changed) = present_on("a\nc\n", &plain("c"));
        assert_eq!((msg.as_str(), changed), ("", false));
    }

    #[test]
    fn bof_and_regexp_replacement() {
        let p = Present {
            insertbefore: Some("BOF"),
            ..plain("first")
        };
        assert_eq!(present_on("a\n", &p).0, "first\na\n");
        let re = Regex::new("^b=").expect("re");
        let p = Present {
            regexp: Some(&re),
            ..plain("b=2")
        };
        let (text, msg, _) = present_on("a\nb=1\r\n", &p);
        assert_eq!((text.as_str(), msg.as_str()), ("a\nb=2\n", "line replaced"));
    }

    #[test]
    fn insertion_after_and_before_a_pattern() {
        let p = Present {
            insertafter: Some("^a"),
            ..plain("x")
        };
        assert_eq!(present_on("a\nb\na\n", &p).0, "a\nb\na\nx\n");
        let p = Present {
            insertafter: Some("^a"),
            firstmatch: true,
            ..plain("x")
        };
        assert_eq!(present_on("a\nb\na\n", &p).0, "a\nx\nb\na\n");
        let p = Present {
            insertbefore: Some("^b"),
            ..plain("x")
        };
        assert_eq!(present_on("a\nb\n", &p).0, "a\nx\nb\n");
    }

    #[test]
    fn backreferences_in_the_pattern_and_the_line() {
        let re = Regex::new(r"^(REF) .* \1$").expect("a backreference");
        let p = Present {
            regexp: Some(&re),
            backrefs: true,
            ..plain(r"\1 found")
        };
        let (text, msg, _) = present_on("REF x REF\nREF y FER\n", &p);
        assert_eq!(
            (text.as_str(), msg.as_str()),
            ("REF found\nREF y FER\n", "line replaced")
        );
    }

    #[test]
    fn absent_counts_what_it_removes() {
        let mut lines = read_lines("a\nb\na\n");
        assert_eq!(absent(&mut lines, None, None, "a").expect("edit"), 2);
        assert_eq!(lines.concat(), "b\n");
    }
}
