//! Plan errors: every one names the file and line and says what to do.

use std::fmt;
use std::path::PathBuf;

/// Where in the project an input problem is: a path relative to the project root and a line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    /// Path relative to the project root (empty when the problem is not in a file).
    pub path: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
}

impl Location {
    /// A location in `path` at `line`.
    pub fn new(path: impl Into<PathBuf>, line: usize) -> Self {
        Self {
            path: path.into(),
            line: Some(line),
        }
    }

    /// A whole file.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            line: None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}", self.path.display(), line),
            None => write!(f, "{}", self.path.display()),
        }
    }
}

/// What is wrong with the input.
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    /// A file could not be read.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// YAML syntax.
    #[error("YAML syntax error: {0}")]
    Yaml(String),
    /// A vaulted value or file that cannot be decrypted (no password, a wrong one).
    #[error("{0}")]
    Vault(String),
    /// A file that must hold something is empty.
    #[error("file is empty; it must hold {0}")]
    Empty(&'static str),
    /// A value has the wrong type.
    #[error("{what} must be {expected}, not {found}")]
    WrongType {
        /// What the value is (`"vars"`, `"loop"`, ...).
        what: String,
        /// The expected type.
        expected: &'static str,
        /// The type found.
        found: &'static str,
    },
    /// A task keyword or play key that is not known.
    #[error("unknown {context} '{key}'{suggestion}")]
    UnknownKey {
        /// Where the key appeared (`"play key"`, `"module or task keyword"`).
        context: &'static str,
        /// The key.
        key: String,
        /// ` (did you mean 'x'?)` or empty.
        suggestion: String,
    },
    /// A keyword that Ansible has but image builds do not support.
    #[error("'{key}' is not supported in image builds: {why}")]
    Unsupported {
        /// The keyword or module.
        key: String,
        /// Why, and what to use instead.
        why: String,
    },
    /// A task with no module.
    #[error("task has no module; add one such as 'shell:', 'copy:' or 'package:'")]
    NoModule,
    /// A task with two modules.
    #[error("task names two modules, '{0}' and '{1}'; split it into two tasks")]
    TwoModules(String, String),
    /// A module parameter problem.
    #[error("module '{module}': {message}")]
    Module {
        /// The module's short name.
        module: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A fact only a running host has (hardware, memory, network), which an image has not.
    #[error("'{name}'{chain} is a fact of a running host (hardware, memory, network), and an image has no hardware; give the value the image is built for with -e {name}=... or the recipe's facts: ({short}: ...)")]
    HostFact {
        /// The fact.
        name: String,
        /// ` (needed by a -> b)` or empty.
        chain: String,
        /// The name without `ansible_`, as the recipe's `facts:` takes it.
        short: String,
    },
    /// A variable used but not defined.
    #[error("undefined variable '{name}'{chain}; define it in the recipe's vars, the role's defaults/main.yml, or pass -e {name}=...")]
    Undefined {
        /// The variable.
        name: String,
        /// ` (needed by a -> b)` or empty.
        chain: String,
    },
    /// Variables that reference each other.
    #[error("variable cycle: {0}; break the loop by giving one of them a plain value")]
    Cycle(String),
    /// Any other templating error.
    #[error("template error in {template}: {message}")]
    Template {
        /// Where: the template (or its line) the error is in.
        template: String,
        /// minijinja's message.
        message: String,
    },
    /// An error inside a named task.
    #[error("in task '{task}': {inner}")]
    InTask {
        /// The task's name.
        task: String,
        /// The error.
        inner: Box<ErrorKind>,
    },
    /// A role that does not exist.
    #[error("role '{name}' not found (looked in {searched}){suggestion}")]
    MissingRole {
        /// The role name.
        name: String,
        /// Folders searched.
        searched: String,
        /// ` (did you mean 'x'?)` or empty.
        suggestion: String,
    },
    /// A file that a task refers to does not exist.
    #[error("{what} '{name}' not found (looked for {searched})")]
    MissingFile {
        /// `"include file"`, `"template"`, ...
        what: &'static str,
        /// The name as written.
        name: String,
        /// Paths tried.
        searched: String,
    },
    /// A recipe-level problem.
    #[error("{0}")]
    Recipe(String),
    /// A lookup loop that fails on its terms (Ansible's message, met when the task runs).
    #[error("{0}")]
    Lookup(String),
    /// The task's action plugin refuses it when it runs (Ansible's message).
    #[error("{0}")]
    ActionRefuses(String),
    /// An unknown image name.
    #[error("no image '{name}' in images/{suggestion}; `imgbuild list` shows the images")]
    UnknownImage {
        /// The name asked for.
        name: String,
        /// ` (did you mean 'x'?)` or empty.
        suggestion: String,
    },
    /// A bad `-e` argument.
    #[error("bad -e '{0}': write KEY=VALUE, a JSON/YAML mapping, or @FILE")]
    ExtraVar(String),
    /// `mirror.toml` could not be used.
    #[error(transparent)]
    Mirror(#[from] mirror::MirrorConfigError),
}

/// An input problem, located.
#[derive(Debug, thiserror::Error)]
pub struct PlanError {
    /// Where it is.
    pub location: Location,
    /// What it is.
    pub kind: ErrorKind,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // mirror.toml errors carry their own location.
        if self.location.path.as_os_str().is_empty() || matches!(self.kind, ErrorKind::Mirror(_)) {
            write!(f, "{}", self.kind)
        } else {
            write!(f, "{}: {}", self.location, self.kind)
        }
    }
}

impl PlanError {
    /// An error at `location`.
    pub fn new(location: Location, kind: ErrorKind) -> Self {
        Self { location, kind }
    }

    /// An error with no file (command-line problems).
    pub fn unlocated(kind: ErrorKind) -> Self {
        Self {
            location: Location::default(),
            kind,
        }
    }
}

/// `Result` with [`PlanError`].
pub type Result<T, E = PlanError> = std::result::Result<T, E>;

/// ` (did you mean 'x'?)` for the closest candidate within a small edit distance, or empty.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let limit = (word.len() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| format!(" (did you mean '{c}'?)"))
        .unwrap_or_default()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            let next = (prev + cost).min(row[j] + 1).min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_words_only() {
        assert_eq!(suggest("dset", ["dest", "url"]), " (did you mean 'dest'?)");
        assert_eq!(suggest("zzzzzz", ["dest", "url"]), "");
    }

    #[test]
    fn display_has_path_and_line() {
        let err = PlanError::new(
            Location::new("roles/a/tasks/main.yml", 3),
            ErrorKind::NoModule,
        );
        assert!(err
            .to_string()
            .starts_with("roles/a/tasks/main.yml:3: task has no module"));
    }
}
