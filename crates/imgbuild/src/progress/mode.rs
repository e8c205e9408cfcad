//! How much progress to show, and how: `--progress auto|plain|tty|json` as BuildKit takes it,
//! `-q` and `-v`, and what the terminal is (`TERM=dumb` takes no cursor escapes). Set once from
//! the command line, before any display is made.

use std::io::IsTerminal;
use std::sync::OnceLock;

use clap::ValueEnum;

/// `--progress`.
#[derive(Debug, Clone, Copy, Default, ValueEnum, PartialEq, Eq)]
pub enum Progress {
    /// tty on a terminal; plain in CI, with TERM=dumb or without a terminal.
    #[default]
    Auto,
    /// Plain lines, no cursor escapes (a `still running` line for long tasks).
    Plain,
    /// A live block redrawn in place, one line per image building.
    Tty,
    /// One JSON event per line on standard output (as --json).
    Json,
}

/// `-q`, `-v`, or neither.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Verbosity {
    /// Only errors and the final result.
    Quiet,
    /// Steps, roles, tasks, layers; a command's output only when it fails.
    #[default]
    Normal,
    /// Also every line of every command's output.
    Verbose,
}

/// The run's progress settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mode {
    /// `--progress`.
    pub progress: Progress,
    /// `-q` / `-v`.
    pub verbosity: Verbosity,
}

static MODE: OnceLock<Mode> = OnceLock::new();

/// Sets the run's mode (the first call wins).
pub fn set(mode: Mode) {
    let _ = MODE.set(mode);
}

/// The run's mode (the default until [`set`]).
pub fn current() -> Mode {
    MODE.get().copied().unwrap_or_default()
}

/// Whether `-q` asked for only errors and the final result.
pub fn quiet() -> bool {
    current().verbosity == Verbosity::Quiet
}

/// What standard error is connected to.
#[derive(Debug, Clone, Copy, Default)]
pub struct Terminal {
    /// A terminal.
    pub is_tty: bool,
    /// `TERM=dumb`: no cursor escapes.
    pub dumb: bool,
    /// `CI` is set: a log, whatever pretends to be a terminal.
    pub ci: bool,
}

impl Terminal {
    /// Standard error's, with `TERM` and `CI` from the environment.
    pub fn of_stderr() -> Self {
        Self {
            is_tty: std::io::stderr().is_terminal(),
            dumb: std::env::var_os("TERM").is_some_and(|term| term == "dumb"),
            ci: std::env::var_os("CI").is_some(),
        }
    }
}

/// The display a run gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// JSON events.
    Json,
    /// Nothing but errors and the result.
    Quiet,
    /// Plain lines.
    Plain,
    /// The live block.
    Tty,
}

/// The display for `mode` on `terminal`; `json`: the command was given `--json`. A dumb
/// terminal gets plain lines even when tty is asked for, as it cannot move its cursor.
pub fn choose(json: bool, mode: Mode, terminal: Terminal) -> Shown {
    if json || mode.progress == Progress::Json {
        return Shown::Json;
    }
    if mode.verbosity == Verbosity::Quiet {
        return Shown::Quiet;
    }
    match mode.progress {
        Progress::Tty if !terminal.dumb => Shown::Tty,
        Progress::Auto if terminal.is_tty && !terminal.dumb && !terminal.ci => Shown::Tty,
        _ => Shown::Plain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TERMINAL: Terminal = Terminal {
        is_tty: true,
        dumb: false,
        ci: false,
    };

    fn mode(progress: Progress, verbosity: Verbosity) -> Mode {
        Mode {
            progress,
            verbosity,
        }
    }

    #[test]
    fn auto_is_tty_on_a_terminal_and_plain_elsewhere() {
        let auto = mode(Progress::Auto, Verbosity::Normal);
        assert_eq!(choose(false, auto, TERMINAL), Shown::Tty);
        let pipe = Terminal {
            is_tty: false,
            ..TERMINAL
        };
        assert_eq!(choose(false, auto, pipe), Shown::Plain);
        let ci = Terminal {
            ci: true,
            ..TERMINAL
        };
        assert_eq!(choose(false, auto, ci), Shown::Plain);
        let plain = mode(Progress::Plain, Verbosity::Verbose);
        assert_eq!(choose(false, plain, TERMINAL), Shown::Plain);
        // Asked for, tty draws even into a pipe (as BuildKit's).
        let tty = mode(Progress::Tty, Verbosity::Normal);
        assert_eq!(choose(false, tty, pipe), Shown::Tty);
    }

    #[test]
    fn a_dumb_terminal_gets_no_cursor_escapes() {
        let dumb = Terminal {
            dumb: true,
            ..TERMINAL
        };
        for progress in [Progress::Auto, Progress::Tty, Progress::Plain] {
            assert_eq!(
                choose(false, mode(progress, Verbosity::Normal), dumb),
                Shown::Plain
            );
        }
    }

    #[test]
    fn json_goes_first_then_quiet() {
        let quiet = mode(Progress::Tty, Verbosity::Quiet);
        assert_eq!(choose(false, quiet, TERMINAL), Shown::Quiet);
        assert_eq!(choose(true, quiet, TERMINAL), Shown::Json);
        let json = mode(Progress::Json, Verbosity::Normal);
        assert_eq!(choose(false, json, TERMINAL), Shown::Json);
    }
}
