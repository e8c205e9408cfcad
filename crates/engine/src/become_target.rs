//! A task's target as its `become_user`: the user looked up in the image, and a target whose
//! commands and file work are that user's (see [`crate::become_user`]).

use std::path::Path;

use crate::become_user::{BecomeError, User};
use crate::rootfs::RootFs;
use crate::target::{Cmd, CmdOutput, Target, TargetError};

/// `name` as the image's `/etc/passwd` and `/etc/group` define it.
pub fn lookup(fs: &RootFs, name: &str) -> Result<User, BecomeError> {
    let passwd = fs
        .read_text_opt(Path::new("/etc/passwd"))
        .map_err(|e| BecomeError::Unreadable(e.to_string()))?
        .unwrap_or_default();
    let group = fs
        .read_text_opt(Path::new("/etc/group"))
        .map_err(|e| BecomeError::Unreadable(e.to_string()))?
        .unwrap_or_default();
    User::from_files(&passwd, &group, name).ok_or_else(|| BecomeError::NoUser(name.to_owned()))
}

/// A target whose commands and file work are a user's.
pub struct BecomeTarget<'a> {
    inner: &'a dyn Target,
    fs: RootFs,
    user: User,
}

impl<'a> BecomeTarget<'a> {
    /// `inner` as `user`.
    pub fn new(inner: &'a dyn Target, user: User) -> Result<Self, TargetError> {
        let fs = inner.fs().for_user(user.clone())?;
        Ok(Self { inner, fs, user })
    }
}

/// `target` as a task's `become_user`, when it names one.
pub fn for_task<'a>(
    target: &'a dyn Target,
    user: Option<&str>,
) -> Result<Option<BecomeTarget<'a>>, BecomeError> {
    let Some(name) = user else { return Ok(None) };
    let user = lookup(target.fs(), name)?;
    BecomeTarget::new(target, user)
        .map(Some)
        .map_err(|e| BecomeError::Target(e.to_string()))
}

impl Target for BecomeTarget<'_> {
    fn run(&self, cmd: &Cmd) -> Result<CmdOutput, TargetError> {
        let mut cmd = cmd.clone();
        cmd.user = Some(self.user.clone());
        self.inner.run(&cmd)
    }

    fn fs(&self) -> &RootFs {
        &self.fs
    }

    fn sandbox_init(&self) -> Option<u32> {
        self.inner.sandbox_init()
    }

    fn host_work(&self) -> Option<&std::path::Path> {
        self.inner.host_work()
    }

    fn user(&self) -> Option<&User> {
        Some(&self.user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_work_as_a_user_is_checked_and_owned_as_that_users() {
        if !rustix::process::geteuid().is_root() {
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(
            dir.path(),
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
        )
        .expect("chmod");
        let root = RootFs::plain(dir.path()).expect("rootfs");
        root.write_atomic(Path::new("/secret"), b"x", Some(0o600))
            .expect("secret");
        root.mkdir_all(Path::new("/open"), 0o777).expect("open");
        root.chmod(Path::new("/open"), 0o777).expect("chmod open");
        let user = User {
            name: "alice".into(),
            uid: 4242,
            gid: 4343,
            groups: vec![4343],
            home: "/".into(),
            shell: "/bin/sh".into(),
        };
        let alice = root.for_user(user).expect("for_user");
        let denied = alice.read(Path::new("/secret")).expect_err("0600 of root");
        assert_eq!(denied.source.raw_os_error(), Some(13));
        alice
            .write_atomic(Path::new("/open/mine"), b"y", None)
            .expect("write as alice");
        let meta = root
            .meta(Path::new("/open/mine"))
            .expect("meta")
            .expect("made");
        assert_eq!((meta.uid, meta.gid), (4242, 4343));
        assert!(rustix::process::geteuid().is_root(), "root's ids come back");
        assert_eq!(root.read(Path::new("/secret")).expect("root reads"), b"x");
    }
}
