//! Python's `shlex.split` (POSIX mode, no comments): how Ansible splits a command line where it
//! needs words without a shell, as the script action finds its script.

/// Why a line does not split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShlexError {
    /// A quote is never closed (Python: `No closing quotation`).
    #[error("No closing quotation")]
    NoClosingQuotation,
    /// The line ends in a backslash (Python: `No escaped character`).
    #[error("No escaped character")]
    NoEscapedCharacter,
}

/// The words of `line` as `shlex.split` gives them.
pub fn split(line: &str) -> Result<Vec<String>, ShlexError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(ShlexError::NoClosingQuotation),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        // Inside double quotes a backslash escapes only `"` and itself.
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(ShlexError::NoClosingQuotation),
                        },
                        Some(c) => word.push(c),
                        None => return Err(ShlexError::NoClosingQuotation),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next().ok_or(ShlexError::NoEscapedCharacter)?);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_escapes_as_python_shlex() {
        assert_eq!(
            split(r#"'space path/test.sh' a\ b "c \$d \"e\"" ''"#).expect("splits"),
            vec!["space path/test.sh", "a b", r#"c \$d "e""#, ""]
        );
    }

    #[test]
    fn unclosed_quote_is_refused() {
        assert_eq!(split("'open"), Err(ShlexError::NoClosingQuotation));
        assert_eq!(split("end\\"), Err(ShlexError::NoEscapedCharacter));
    }
}
