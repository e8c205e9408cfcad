//! Why a template could not be rendered, and what a condition came to.

/// Why a template could not be rendered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TemplateError {
    /// A variable that is not defined; `chain` lists the variables whose values needed it.
    #[error("undefined variable '{name}'")]
    Undefined {
        /// The missing name.
        name: String,
        /// Outermost first.
        chain: Vec<String>,
    },
    /// Variables referencing each other, as `a -> b -> a`.
    #[error("variable cycle: {0}")]
    Cycle(String),
    /// Syntax errors, unknown filters, bad filter arguments, ...
    #[error("{message}")]
    Other {
        /// The line of the template it is on, when minijinja says.
        line: Option<usize>,
        /// The template text.
        template: String,
        /// What minijinja said.
        message: String,
    },
}

/// Stands in a filter's message for the name of the undefined variable it was given (minijinja's
/// undefined value has none); the templar writes it as Jinja2's `_undefined_name`, quoted and
/// followed by a space, or nothing when no name was looked up.
pub(super) const UNDEFINED_NAME: &str = "\u{1}missing name\u{1}";

impl TemplateError {
    /// A lookup's own failure in the plugin's words, what Ansible reports for the task, when
    /// this is one.
    pub fn lookup_failure(&self) -> Option<String> {
        let TemplateError::Other { message, .. } = self else {
            return None;
        };
        let words = message.strip_suffix(": the lookup failed")?;
        Some(
            words
                .strip_prefix("invalid operation: ")
                .unwrap_or(words)
                .to_owned(),
        )
    }
}

/// The outcome of evaluating a condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// Known at plan time.
    Known(bool),
    /// Depends on build-time results.
    Deferred,
    /// Known, but not a boolean: the value's text, and its truth as ansible-core 2.14 takes it
    /// (Jinja2's: a non-empty text, list or mapping, a non-zero number). 2.19 refuses it.
    NotBoolean(String, bool),
}
