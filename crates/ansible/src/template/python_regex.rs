//! Python regular expressions compiled with the regex crate, refused in Python's words
//! (`nothing to repeat at position 0`), which Ansible passes on in its error messages.

use regex::Regex;

/// `pattern` compiled; `Err` is what Python's `re.compile` would say of it.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    Regex::new(pattern).map_err(|e| python_message(pattern, &e))
}

/// Python's wording for a pattern the regex crate refused, with the position it names.
fn python_message(pattern: &str, error: &regex::Error) -> String {
    let text = error.to_string();
    // The crate prints the pattern, a line with `^` under the fault, then `error: ...`.
    let position = text
        .lines()
        .find(|l| l.trim_start().starts_with('^'))
        .map(|l| l.find('^').unwrap_or(4).saturating_sub(4))
        .map(|column| {
            pattern
                .chars()
                .take(column)
                .map(char::len_utf8)
                .sum::<usize>()
        })
        .unwrap_or(0);
    let reason = text
        .lines()
        .find_map(|l| l.strip_prefix("error: "))
        .unwrap_or(&text);
    let python = match reason {
        r if r.contains("repetition operator missing expression") => "nothing to repeat",
        r if r.contains("unclosed group") => "missing ), unterminated subpattern",
        r if r.contains("unopened group") => "unbalanced parenthesis",
        r if r.contains("unclosed character class") => "unterminated character set",
        other => other,
    };
    format!("{python} at position {position}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_python_words_them() {
        assert_eq!(
            compile("*").err().as_deref(),
            Some("nothing to repeat at position 0")
        );
        assert_eq!(
            compile("ab(c").err().as_deref(),
            Some("missing ), unterminated subpattern at position 2")
        );
        assert!(compile(r"^q.*_\d").is_ok_and(|r| r.is_match("qz_1")));
    }
}
