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
}
