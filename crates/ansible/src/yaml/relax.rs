//! Indentation that PyYAML accepts and yaml-rust2 refuses, made acceptable to yaml-rust2.
//!
//! yaml-rust2 (0.11 and 0.13 alike) holds the lines of a flow collection and the continuation
//! lines of a quoted scalar to the indentation of the block around them, as YAML 1.2 says;
//! PyYAML checks no indentation there, so Ansible reads, for example,
//!
//! ```yaml
//! foo: {
//!   a: 1
//! }
//! bar: "two
//! lines"
//! ```
//!
//! Leading whitespace is no content in either place (a flow collection ignores it, and folding
//! trims it from a quoted scalar's continuation lines), so the line yaml-rust2 refuses is
//! indented further and the text parsed again. Lines are kept, so every line number stays right.
//! Only yaml-rust2's own indentation errors lead here: "invalid indentation" and "invalid
//! indentation in flow construct" are raised only inside a flow collection (in block context
//! the scanner first pops every indentation level deeper than the token), and "invalid
//! indentation in quoted scalar" names the scalar's start, whose end is found by its quotes.

use std::collections::HashMap;

/// The spaces added so far, per 1-based line.
#[derive(Debug, Default)]
pub(super) struct Relaxed {
    added: HashMap<usize, usize>,
    tries: usize,
}

/// At most this many re-indented lines per document line (it doubles each time: 1, 2, 4, ...).
const MAX_ADDED: usize = 512;

impl Relaxed {
    /// The text re-indented for the error yaml-rust2 gave at `line` (1-based), `col`
    /// (0-based), or `None` when the error is not one of PyYAML's leniencies (or is still there
    /// after re-indenting).
    pub(super) fn fix(
        &mut self,
        text: &str,
        message: &str,
        line: usize,
        col: usize,
    ) -> Option<String> {
        self.tries += 1;
        if self.tries > 64 + 8 * text.lines().count() {
            return None;
        }
        let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
        match message {
            "invalid indentation" | "invalid indentation in flow construct" => {
                let before = self.added.get(&line).copied().unwrap_or(0);
                let more = before.max(1);
                if before + more > MAX_ADDED {
                    return None;
                }
                self.indent(&mut lines, line, more)?;
            }
            "invalid indentation in quoted scalar" => {
                let continuation = quoted_lines(&lines, line, col)?;
                let mut changed = false;
                for index in continuation {
                    let current = lines[index - 1]
                        .chars()
                        .take_while(|c| *c == ' ' || *c == '\t')
                        .count();
                    let blank = lines[index - 1].trim().is_empty();
                    if !blank && current < col {
                        self.indent(&mut lines, index, col - current)?;
                        changed = true;
                    }
                }
                if !changed {
                    return None;
                }
            }
            _ => return None,
        }
        Some(lines.join("\n"))
    }

    fn indent(&mut self, lines: &mut [String], line: usize, spaces: usize) -> Option<()> {
        let text = lines.get_mut(line.checked_sub(1)?)?;
        text.insert_str(0, &" ".repeat(spaces));
        *self.added.entry(line).or_default() += spaces;
        Some(())
    }

    /// A 0-based column of the re-indented text as a column of the text as written.
    pub(super) fn original_col(&self, line: usize, col: usize) -> usize {
        col.saturating_sub(self.added.get(&line).copied().unwrap_or(0))
    }
}

/// The 1-based lines after the first of the quoted scalar that starts at `line`, `col` (its
/// quote): to the line of its closing quote.
fn quoted_lines(lines: &[String], line: usize, col: usize) -> Option<Vec<usize>> {
    let first: Vec<char> = lines.get(line.checked_sub(1)?)?.chars().collect();
    let quote = *first.get(col)?;
    if quote != '"' && quote != '\'' {
        return None;
    }
    let mut chars = first[col + 1..].to_vec();
    let mut index = line;
    let mut continuation = Vec::new();
    loop {
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '\\' if quote == '"' => i += 1,
                '\'' if quote == '\'' && chars.get(i + 1) == Some(&'\'') => i += 1,
                c if c == quote => return Some(continuation),
                _ => {}
            }
            i += 1;
        }
        index += 1;
        chars = lines.get(index - 1)?.chars().collect();
        continuation.push(index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_scalar_ends_at_its_unescaped_quote() {
        let lines: Vec<String> = ["a: \"x\\\"", "y \\\\\" b", "c: 'it''s", "", "z'"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(quoted_lines(&lines, 1, 3), Some(vec![2]));
        assert_eq!(quoted_lines(&lines, 3, 3), Some(vec![4, 5]));
        assert_eq!(quoted_lines(&lines, 1, 0), None, "no quote there");
    }

    #[test]
    fn other_errors_are_left_alone() {
        let mut relaxed = Relaxed::default();
        assert_eq!(
            relaxed.fix("a: [\n", "did not find expected ',' or ']'", 2, 0),
            None
        );
    }

    #[test]
    fn a_flow_line_is_indented_more_each_time() {
        let mut relaxed = Relaxed::default();
        let once = relaxed
            .fix("a: {\n}\n", "invalid indentation", 2, 0)
            .expect("fixed");
        assert_eq!(once, "a: {\n }\n");
        let twice = relaxed
            .fix(&once, "invalid indentation", 2, 1)
            .expect("fixed");
        assert_eq!(twice, "a: {\n  }\n", "1 space, then 1 more: doubled");
        assert_eq!(relaxed.original_col(2, 2), 0);
    }
}
