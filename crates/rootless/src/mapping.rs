//! What a rootless run maps, read from this machine, and the checks before it.

use std::path::PathBuf;

use crate::error::RootlessError;
use crate::subids::{self, IdRange, SubIds};
use crate::sysctl;

/// What a rootless run needs, found on this machine: the user, their ranges and the tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// The user's id (root inside).
    pub uid: u32,
    /// The user's group id (root's group inside).
    pub gid: u32,
    /// Subordinate user ids: ids 1 and up inside.
    pub uids: Vec<IdRange>,
    /// Subordinate group ids: ids 1 and up inside.
    pub gids: Vec<IdRange>,
}

/// The fewest subordinate ids a build works with: an image's ids run to 65534 (`nobody`).
pub const MIN_IDS: u64 = 65535;

/// Whether this process runs as root (then nothing here is needed).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Checks that this user can build rootless here; the mapping to enter with, or why not.
pub fn check() -> Result<Mapping, RootlessError> {
    sysctl::check_user_namespaces()?;
    for tool in ["newuidmap", "newgidmap"] {
        if find_tool(tool).is_none() {
            return Err(RootlessError::MissingTool { tool });
        }
    }
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let user = subids::user_name(uid);
    let uids = SubIds::read("/etc/subuid")?.ranges_of(user.as_deref(), uid);
    let gids = SubIds::read("/etc/subgid")?.ranges_of(user.as_deref(), uid);
    for (file, ranges) in [("/etc/subuid", &uids), ("/etc/subgid", &gids)] {
        let count: u64 = ranges.iter().map(|r| u64::from(r.count)).sum();
        if count < MIN_IDS {
            return Err(RootlessError::NoRange {
                user: user.clone().unwrap_or_else(|| uid.to_string()),
                file,
                count,
            });
        }
    }
    Ok(Mapping {
        uid,
        gid,
        uids,
        gids,
    })
}

/// `name` on `PATH`, else in the folders shadow-utils installs it to.
pub(crate) fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin", "/usr/sbin", "/bin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}
