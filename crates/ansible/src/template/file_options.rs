//! How a template file is rendered: the `template` module's Jinja options and a file's own
//! `#jinja2:` first line.

use minijinja::syntax::SyntaxConfig;
use minijinja::Environment;

use super::error::TemplateError;

/// How a template file is rendered, as the `template` module's options say (`None`: Ansible's
/// default, trim_blocks on, lstrip_blocks off, Jinja's own delimiters).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOptions {
    /// Drop the newline after a block tag.
    pub trim_blocks: Option<bool>,
    /// Strip spaces before a block tag.
    pub lstrip_blocks: Option<bool>,
    /// Other delimiters (`variable_start_string`, ...): the option's name and its value.
    pub delimiters: Vec<(Delimiter, String)>,
}

/// One of the six delimiters the `template` module lets a task change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delimiter {
    /// `block_start_string` (`{%`).
    BlockStart,
    /// `block_end_string` (`%}`).
    BlockEnd,
    /// `variable_start_string` (`{{`).
    VariableStart,
    /// `variable_end_string` (`}}`).
    VariableEnd,
    /// `comment_start_string` (`{#`).
    CommentStart,
    /// `comment_end_string` (`#}`).
    CommentEnd,
}

impl Delimiter {
    /// Every delimiter with the option that sets it and Jinja's default.
    pub const ALL: [(Delimiter, &'static str, &'static str); 6] = [
        (Delimiter::BlockStart, "block_start_string", "{%"),
        (Delimiter::BlockEnd, "block_end_string", "%}"),
        (Delimiter::VariableStart, "variable_start_string", "{{"),
        (Delimiter::VariableEnd, "variable_end_string", "}}"),
        (Delimiter::CommentStart, "comment_start_string", "{#"),
        (Delimiter::CommentEnd, "comment_end_string", "#}"),
    ];

    /// The delimiter an option name sets.
    pub fn from_option(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .find(|(_, option, _)| *option == name)
            .map(|(d, _, _)| *d)
    }

    fn default_text(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(d, _, _)| *d == self)
            .map_or("", |(_, _, text)| text)
    }
}

impl FileOptions {
    /// Whether the file is read with delimiters other than Jinja's own.
    pub fn has_delimiters(&self) -> bool {
        self.delimiters
            .iter()
            .any(|(d, text)| text != d.default_text())
    }

    fn delimiter(&self, which: Delimiter) -> String {
        self.delimiters
            .iter()
            .rev()
            .find(|(d, _)| *d == which)
            .map_or_else(|| which.default_text().to_owned(), |(_, t)| t.clone())
    }

    /// Sets these options on an environment.
    pub(super) fn apply(&self, env: &mut Environment<'static>) -> Result<(), TemplateError> {
        env.set_trim_blocks(self.trim_blocks.unwrap_or(true));
        env.set_lstrip_blocks(self.lstrip_blocks.unwrap_or(false));
        if !self.has_delimiters() {
            return Ok(());
        }
        let syntax = SyntaxConfig::builder()
            .block_delimiters(
                self.delimiter(Delimiter::BlockStart),
                self.delimiter(Delimiter::BlockEnd),
            )
            .variable_delimiters(
                self.delimiter(Delimiter::VariableStart),
                self.delimiter(Delimiter::VariableEnd),
            )
            .comment_delimiters(
                self.delimiter(Delimiter::CommentStart),
                self.delimiter(Delimiter::CommentEnd),
            )
            .build()
            .map_err(|e| {
                header_error(format!(
                    "the template's delimiters do not work together: {e}"
                ))
            })?;
        env.set_syntax(syntax);
        Ok(())
    }

    /// These options with a `#jinja2:` first line applied, and the text without that line.
    pub(super) fn with_header(self, text: &str) -> Result<(Self, &str), TemplateError> {
        let Some(rest) = text.strip_prefix("#jinja2:") else {
            return Ok((self, text));
        };
        let (line, body) = rest.split_once('\n').unwrap_or((rest, ""));
        let mut options = self;
        for pair in line.split(',') {
            let (key, value) = pair.split_once(':').ok_or_else(|| {
                header_error(format!("the '#jinja2:' line: '{pair}' is not 'key: value'"))
            })?;
            options.set_from_header(key.trim(), value.trim())?;
        }
        Ok((options, body))
    }

    /// One `key: value` of a `#jinja2:` line (the value a Python literal, as Ansible reads it).
    fn set_from_header(&mut self, key: &str, value: &str) -> Result<(), TemplateError> {
        let flag = || match value {
            "True" | "true" => Ok(true),
            "False" | "false" => Ok(false),
            other => Err(header_error(format!(
                "the '#jinja2:' line: {key}: '{other}' is not True or False"
            ))),
        };
        match key {
            "trim_blocks" => self.trim_blocks = Some(flag()?),
            "lstrip_blocks" => self.lstrip_blocks = Some(flag()?),
            other => {
                let Some(which) = Delimiter::from_option(other) else {
                    return Err(header_error(format!(
                        "the '#jinja2:' line sets '{other}', which imgbuild does not support (trim_blocks, lstrip_blocks, the *_string delimiters)"
                    )));
                };
                let text = python_string(value).ok_or_else(|| {
                    header_error(format!(
                        "the '#jinja2:' line: {key}: {value} is not a quoted string"
                    ))
                })?;
                self.delimiters.push((which, text));
            }
        }
        Ok(())
    }
}

/// A quoted Python string literal's text (`'[%'` or `"[%"`).
fn python_string(value: &str) -> Option<String> {
    let quote = value.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = value.strip_prefix(quote)?.strip_suffix(quote)?;
    Some(inner.to_owned())
}

fn header_error(message: String) -> TemplateError {
    TemplateError::Other {
        line: None,
        template: "#jinja2:".into(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_sets_flags_and_delimiters() {
        let text = "#jinja2: trim_blocks: False, variable_start_string: '[%'\nbody";
        let (options, body) = FileOptions::default().with_header(text).expect("header");
        assert_eq!(body, "body");
        assert_eq!(options.trim_blocks, Some(false));
        assert_eq!(options.delimiter(Delimiter::VariableStart), "[%");
        assert!(options.has_delimiters());
    }

    #[test]
    fn a_header_with_an_unknown_key_is_refused() {
        let err = FileOptions::default()
            .with_header("#jinja2: autoescape: True\n")
            .expect_err("refused");
        assert!(err.to_string().contains("autoescape"), "{err}");
    }

    #[test]
    fn default_delimiters_are_no_custom_syntax() {
        let options = FileOptions {
            delimiters: vec![(Delimiter::VariableStart, "{{".into())],
            ..FileOptions::default()
        };
        assert!(!options.has_delimiters());
    }
}
