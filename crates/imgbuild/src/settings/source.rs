//! Where a setting in force comes from.

use std::path::{Path, PathBuf};

/// Where a setting comes from, lowest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// imgbuild's own default.
    Default,
    /// `/etc/imgbuild/config.toml`.
    System(PathBuf),
    /// `$XDG_CONFIG_HOME/imgbuild/config.toml`.
    User(PathBuf),
    /// The file `IMGBUILD_CONFIG` names, in place of the system and user files.
    Named(PathBuf),
    /// The project's `mirror.toml`.
    Project(PathBuf),
    /// An environment variable.
    Env(&'static str),
    /// An option of the command line (or the environment variable it reads).
    Flag(&'static str),
}

impl Source {
    /// The file it is, for the files.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Source::System(path)
            | Source::User(path)
            | Source::Named(path)
            | Source::Project(path) => Some(path),
            Source::Default | Source::Env(_) | Source::Flag(_) => None,
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => write!(f, "default"),
            Source::System(path) => write!(f, "system file {}", path.display()),
            Source::User(path) => write!(f, "user file {}", path.display()),
            Source::Named(path) => write!(f, "IMGBUILD_CONFIG file {}", path.display()),
            Source::Project(path) => write!(f, "project {}", path.display()),
            Source::Env(name) => write!(f, "environment {name}"),
            Source::Flag(name) => write!(f, "option {name}"),
        }
    }
}
