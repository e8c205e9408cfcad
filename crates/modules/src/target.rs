//! Where tasks run: a [`Target`] runs commands and gives file access, relative to its root.

use std::path::Path;

use crate::rootfs::RootFs;

/// The `PATH` of every command's base environment (design.md §4); it lives here, beside the
/// commands, so that the sandbox and the `uname` shim both read it without naming each other.
pub const BASE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// What a command whose program is not in the image reports on stderr (with rc 127).
pub fn not_found(program: &str) -> String {
    format!("{program}: command not found in the image")
}

/// A command to run in the target.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cmd {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Extra environment (on top of the target's base environment).
    pub env: Vec<(String, String)>,
    /// Working directory inside the target.
    pub cwd: Option<String>,
    /// Standard input.
    pub stdin: Option<String>,
    /// The user it runs as (`become_user`); root when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<crate::become_user::User>,
}

impl Cmd {
    /// A command from its words.
    pub fn new<S: AsRef<str>>(argv: &[S]) -> Self {
        Self {
            argv: argv.iter().map(|s| s.as_ref().to_owned()).collect(),
            ..Self::default()
        }
    }

    /// `/bin/sh -c <script>`.
    pub fn shell(script: &str) -> Self {
        Self::new(&["/bin/sh", "-c", script])
    }

    /// Adds an environment variable.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }
}

/// What a command did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CmdOutput {
    /// Exit code (128 + signal when killed; 127 when the program was not found).
    pub rc: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Why a target could not run something.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The sandbox could not be set up or died.
    #[error("build sandbox: {0}")]
    Sandbox(String),
    /// overlayfs could not be mounted on the sandbox's root: the caller may run in a copy.
    #[error("build sandbox: {0}")]
    NoOverlay(String),
    /// A file operation failed.
    #[error(transparent)]
    Fs(#[from] crate::rootfs::FsError),
    /// This target cannot run commands.
    #[error("this target cannot run commands")]
    NoCommands,
}

/// A place tasks run: commands and files, all relative to its root.
pub trait Target {
    /// Runs a command inside the target.
    fn run(&self, cmd: &Cmd) -> Result<CmdOutput, TargetError>;
    /// File access inside the target.
    fn fs(&self) -> &RootFs;
    /// The init process of the build sandbox the target's commands run in, if it is one: a
    /// command run from outside enters it through `/proc/<pid>/root` (see
    /// `engine::sandbox_enter`).
    fn sandbox_init(&self) -> Option<u32> {
        None
    }
    /// A folder of the building machine, outside the image, removed with the build's work
    /// folders (and by `imgbuild cache prune` after a killed build): where a tool run from
    /// outside the target keeps its files. None: the machine's temporary folder.
    fn host_work(&self) -> Option<&std::path::Path> {
        None
    }
    /// The user the target's commands run as (`become_user`), when not root.
    fn user(&self) -> Option<&crate::become_user::User> {
        None
    }
}

/// A folder used only for its files (tests of file modules); commands are refused.
#[derive(Debug)]
pub struct DirTarget {
    fs: RootFs,
}

impl DirTarget {
    /// Files of `root`, with `/tmp` in `scratch`.
    pub fn new(root: &Path, scratch: &Path) -> std::io::Result<Self> {
        Ok(Self {
            fs: RootFs::new(root, scratch)?,
        })
    }
}

impl Target for DirTarget {
    fn run(&self, _cmd: &Cmd) -> Result<CmdOutput, TargetError> {
        Err(TargetError::NoCommands)
    }
    fn fs(&self) -> &RootFs {
        &self.fs
    }
}
