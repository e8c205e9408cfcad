//! Why imgbuild cannot run rootless here, each with what fixes it.

/// Why a rootless run cannot start.
#[derive(Debug, thiserror::Error)]
pub enum RootlessError {
    /// A kernel setting turns unprivileged user namespaces off.
    #[error("user namespaces are turned off for ordinary users: {setting} is {value}; an administrator allows them with `sysctl -w {setting}={wanted}` (and in /etc/sysctl.d to keep it), or run imgbuild as root")]
    NamespacesOff {
        /// The sysctl (`kernel.unprivileged_userns_clone`, `user.max_user_namespaces`, ...).
        setting: &'static str,
        /// Its value now.
        value: String,
        /// The value that allows them.
        wanted: &'static str,
    },
    /// `newuidmap` or `newgidmap` is not installed.
    #[error("{tool} is not installed: a rootless build maps the user's subordinate ids with it; install it (Debian, Ubuntu: apt-get install uidmap; EL: dnf install shadow-utils), or run imgbuild as root")]
    MissingTool {
        /// The missing command.
        tool: &'static str,
    },
    /// The user has no (or too small a) subordinate range.
    #[error("{user} has {count} subordinate ids in {file}; a rootless build needs at least 65535 (an image's ids run to 65534, nobody); an administrator adds a range with `usermod --add-subuids 100000-165535 --add-subgids 100000-165535 {user}`, or run imgbuild as root")]
    NoRange {
        /// The user's name (or id).
        user: String,
        /// `/etc/subuid` or `/etc/subgid`.
        file: &'static str,
        /// How many ids the file gives the user.
        count: u64,
    },
    /// A subordinate id file could not be read.
    #[error("reading {file}: {source}")]
    Read {
        /// The file.
        file: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// The user namespace could not be made or mapped.
    #[error("starting the user namespace: {0}")]
    Namespace(String),
}
