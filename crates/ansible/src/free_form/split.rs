//! A command's free form split into words as Ansible's `split_args` does, and the words joined
//! back as its `join_args` does: lines split on `\n`, words on single spaces; runs of spaces,
//! line breaks and indentation are kept on the words so joining rebuilds them; a lone `\`
//! outside quotes continues the line (it and the line break go); quotes and Jinja blocks
//! (`{{ }}`, `{% %}`, `{# #}`) hold a word together across spaces and lines.

/// Why a free form cannot be split, in Ansible's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// Spaces or a line break before any word (Ansible fails on an index out of range).
    #[error("Unable to parse argument string. list index out of range")]
    NoWordBefore,
    /// A quote or a Jinja block left open at the end.
    #[error("failed at splitting arguments, either an unbalanced jinja2 block or quotes: {0}")]
    Unbalanced(String),
}

/// The Jinja block kinds whose depth is tracked, by their opening and closing marks.
const BLOCKS: [(&str, &str); 3] = [("{{", "}}"), ("{%", "%}"), ("{#", "#}")];

/// Where the split is between words: the open quote and each Jinja block kind's depth.
#[derive(Default)]
struct State {
    words: Vec<String>,
    quote: Option<char>,
    depths: [usize; 3],
}

impl State {
    fn last(&mut self) -> Result<&mut String, SplitError> {
        self.words.last_mut().ok_or(SplitError::NoWordBefore)
    }

    fn in_jinja(&self) -> bool {
        self.depths.iter().any(|&d| d > 0)
    }

    /// Takes one space-separated token of a line of `count` tokens, at `index`.
    fn token(&mut self, token: &str, index: usize, count: usize) -> Result<(), SplitError> {
        let was_quoted = self.quote.is_some();
        self.quote = quote_after(token, self.quote);
        let quoted = self.quote.is_some();
        let mut placed = false;
        if quoted && !was_quoted && !self.in_jinja() {
            self.words.push(token.to_owned());
            placed = true;
        } else if self.in_jinja() || quoted || was_quoted {
            let last = self.last()?;
            if index == 0 && was_quoted {
                last.push_str(token);
            } else if count > 1 {
                if index > 0 {
                    last.push(' ');
                }
                last.push_str(token);
            } else {
                last.push('\n');
                last.push_str(token);
            }
            placed = true;
        }
        for (depth, (open, close)) in self.depths.iter_mut().zip(BLOCKS) {
            let before = *depth;
            let (opened, closed) = (token.matches(open).count(), token.matches(close).count());
            if opened != closed {
                *depth = (before + opened).saturating_sub(closed);
            }
            if *depth != before && !placed {
                self.words.push(token.to_owned());
                placed = true;
            }
        }
        if !self.in_jinja() && !quoted && !placed && !token.is_empty() {
            self.words.push(token.to_owned());
        }
        Ok(())
    }
}

/// The quote open after `token`, given the one open before it: a quote mark not right after a
/// backslash opens one, or closes the open one when it is the same mark.
fn quote_after(token: &str, mut quote: Option<char>) -> Option<char> {
    let mut previous = None;
    for c in token.chars() {
        if matches!(c, '"' | '\'') && previous != Some('\\') {
            match quote {
                Some(q) if q == c => quote = None,
                Some(_) => {}
                None => quote = Some(c),
            }
        }
        previous = Some(c);
    }
    quote
}

/// Splits a free form into words as Ansible does before it picks out `key=value` words.
pub fn split_args(text: &str) -> Result<Vec<String>, SplitError> {
    let mut state = State::default();
    let lines: Vec<&str> = text.split('\n').collect();
    for (line_index, line) in lines.iter().enumerate() {
        let tokens: Vec<&str> = line.split(' ').collect();
        let mut continued = false;
        for (index, token) in tokens.iter().enumerate() {
            if token.is_empty() && index != 0 {
                state.last()?.push(' ');
            } else if *token == "\\" && state.quote.is_none() {
                continued = true;
            } else {
                state.token(token, index, tokens.len())?;
            }
        }
        if lines.len() > 1 && line_index + 1 != lines.len() && !continued {
            state.last()?.push('\n');
        }
    }
    if state.quote.is_some() || state.in_jinja() {
        return Err(SplitError::Unbalanced(text.to_owned()));
    }
    Ok(state.words)
}

/// Joins words back with a space between them, none after a word that ends a line.
pub fn join_args<S: AsRef<str>>(words: &[S]) -> String {
    let mut out = String::new();
    for word in words {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push(' ');
        }
        out.push_str(word.as_ref());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The free form split and joined again, as Ansible's shell task shows it in `cmd`.
    fn round(text: &str) -> String {
        join_args(&split_args(text).expect("splits"))
    }

    // Each expected text is the `cmd` ansible-playbook 2.14 registered for that free form.
    #[test]
    fn a_lone_backslash_continues_the_line() {
        let text = "echo this is a \\\n\"multiline echo\" \\\n\"with a new line\nin quotes\" \\\n| cat\necho \"this is a second line\"\n";
        assert_eq!(
            round(text),
            "echo this is a \"multiline echo\" \"with a new line\nin quotes\" | cat\necho \"this is a second line\"\n"
        );
        assert_eq!(round("echo a \\\necho b"), "echo a echo b");
        assert_eq!(round("echo a \\\n  \\\n b"), "echo a  b");
    }

    #[test]
    fn spaces_lines_and_indentation_stay() {
        assert_eq!(round("echo   hi  "), "echo   hi  ");
        assert_eq!(round("echo a\tb"), "echo a\tb");
        assert_eq!(round("echo x  \n  true"), "echo x  \n  true");
        assert_eq!(round("echo a\n\n\necho b\n"), "echo a\n\n\necho b\n");
        let heredoc = "cat <<EOF\nOne\n  Two\n    Three\nEOF\n";
        assert_eq!(round(heredoc), heredoc);
    }

    #[test]
    fn quotes_hold_a_word_together() {
        assert_eq!(
            split_args("echo 'a  b' | tr").expect("splits"),
            ["echo", "'a  b'", "|", "tr"]
        );
        assert_eq!(round("echo 'a\n\nb'  c"), "echo 'a\n\nb'  c");
        assert_eq!(round("echo \"it's\" 'x'"), "echo \"it's\" 'x'");
        // A backslash not alone is part of its word.
        assert_eq!(round("echo a\\ b x\\\\ \\"), "echo a\\ b x\\\\");
    }

    #[test]
    fn jinja_blocks_hold_a_word_together() {
        assert_eq!(
            split_args("dest={{ a | b }} x").expect("splits"),
            ["dest={{ a | b }}", "x"]
        );
    }

    #[test]
    fn what_ansible_refuses() {
        assert_eq!(split_args("  echo hi"), Err(SplitError::NoWordBefore));
        assert!(matches!(
            split_args("echo 'a"),
            Err(SplitError::Unbalanced(_))
        ));
        assert!(matches!(
            split_args("echo {{ a"),
            Err(SplitError::Unbalanced(_))
        ));
    }
}
