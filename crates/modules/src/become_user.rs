//! `become_user`: a task that runs as a user of the image. Its commands run with the user's
//! uid, gid, groups and home (as `sudo -H` or `su` start them), and its file work in the image
//! is done with the user's credentials, so the kernel checks access and owns what is made as
//! it would for that user.
//!
//! File work happens on the engine's own thread: Linux keeps credentials per thread, so the
//! thread takes the user's effective ids for one file operation and root's back after it
//! (its real and saved uid stay 0, which is what lets it return).

use std::cell::Cell;

use rustix::process::{Gid, Uid};
use serde::{Deserialize, Serialize};

/// A user of the image, as its `/etc/passwd` and `/etc/group` say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// Login name.
    pub name: String,
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Every group id it is in (the primary one first).
    pub groups: Vec<u32>,
    /// Home folder.
    pub home: String,
    /// Login shell.
    pub shell: String,
}

/// Why a task cannot become its user.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BecomeError {
    /// The image has no such user.
    #[error("become_user: the image has no user '{0}' (/etc/passwd)")]
    NoUser(String),
    /// `/etc/passwd` could not be read.
    #[error("become_user: reading the image's {0}")]
    Unreadable(String),
    /// The target could not be entered as the user.
    #[error("become_user: {0}")]
    Target(String),
}

impl User {
    /// `name` from the texts of `/etc/passwd` and `/etc/group`.
    pub fn from_files(passwd: &str, group: &str, name: &str) -> Option<User> {
        let fields: Vec<&str> = passwd
            .lines()
            .map(|line| line.split(':').collect::<Vec<_>>())
            .find(|f| f.len() >= 7 && f[0] == name)?;
        let (uid, gid) = (fields[2].parse().ok()?, fields[3].parse().ok()?);
        let mut groups = vec![gid];
        for line in group.lines() {
            let f: Vec<&str> = line.split(':').collect();
            let member = f.len() >= 4 && f[3].split(',').any(|m| m.trim() == name);
            if let (true, Some(id)) = (member, f.get(2).and_then(|g| g.parse().ok())) {
                if !groups.contains(&id) {
                    groups.push(id);
                }
            }
        }
        Some(User {
            name: name.to_owned(),
            uid,
            gid,
            groups,
            home: fields[5].to_owned(),
            shell: fields[6].to_owned(),
        })
    }

    /// What `sudo -H` sets for the user's commands.
    pub fn env(&self) -> [(&'static str, String); 4] {
        [
            ("HOME", self.home.clone()),
            ("USER", self.name.clone()),
            ("LOGNAME", self.name.clone()),
            ("SHELL", self.shell.clone()),
        ]
    }

    fn gids(&self) -> Vec<Gid> {
        self.groups.iter().map(|g| Gid::from_raw(*g)).collect()
    }

    /// Its ids, ready for a process about to exec its program.
    pub fn ids(&self) -> Ids {
        Ids {
            uid: Uid::from_raw(self.uid),
            gid: Gid::from_raw(self.gid),
            groups: self.gids(),
        }
    }
}

/// A user's ids in the kernel's types.
#[derive(Debug, Clone)]
pub struct Ids {
    uid: Uid,
    gid: Gid,
    groups: Vec<Gid>,
}

impl Ids {
    /// Makes the calling thread this user for good (a child between fork and exec): only
    /// system calls, nothing allocated.
    pub fn become_for_good(&self) -> rustix::io::Result<()> {
        rustix::thread::set_thread_groups(&self.groups)?;
        rustix::thread::set_thread_res_gid(self.gid, self.gid, self.gid)?;
        rustix::thread::set_thread_res_uid(self.uid, self.uid, self.uid)
    }
}

thread_local! {
    /// The thread has a user's effective credentials now (nested file operations keep them).
    static AS_USER: Cell<bool> = const { Cell::new(false) };
}

/// While alive, the calling thread has a user's effective ids; root's come back on drop.
#[derive(Debug)]
pub struct UserGuard {
    groups: Vec<Gid>,
    egid: Gid,
}

impl UserGuard {
    /// Takes `user`'s effective ids on this thread; `None` when it has them already.
    pub fn enter(user: &User) -> std::io::Result<Option<UserGuard>> {
        if AS_USER.with(Cell::get) {
            return Ok(None);
        }
        let guard = UserGuard {
            groups: rustix::process::getgroups()?,
            egid: rustix::process::getegid(),
        };
        rustix::thread::set_thread_groups(&user.gids())?;
        let switched = rustix::thread::set_thread_res_gid(None, Gid::from_raw(user.gid), None)
            .and_then(|()| rustix::thread::set_thread_res_uid(None, Uid::from_raw(user.uid), None));
        AS_USER.with(|c| c.set(true));
        // From here on, dropping the guard gives root's ids back, also on failure.
        switched?;
        Ok(Some(guard))
    }
}

impl Drop for UserGuard {
    fn drop(&mut self) {
        let restored = rustix::thread::set_thread_res_uid(None, Uid::ROOT, None)
            .and_then(|()| rustix::thread::set_thread_res_gid(None, self.egid, None))
            .and_then(|()| rustix::thread::set_thread_groups(&self.groups));
        if let Err(e) = restored {
            // Going on with a user's ids would run later tasks as that user.
            eprintln!("imgbuild: cannot return to root's credentials after become_user: {e}");
            std::process::abort();
        }
        AS_USER.with(|c| c.set(false));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str =
        "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000:Alice:/home/alice:/bin/sh\n";
    const GROUP: &str = "root:x:0:\nalice:x:1000:\nstaff:x:50:bob,alice\naudio:x:29:bob\n";

    #[test]
    fn user_from_passwd_and_group() {
        let user = User::from_files(PASSWD, GROUP, "alice").expect("alice");
        assert_eq!((user.uid, user.gid), (1000, 1000));
        assert_eq!(user.groups, vec![1000, 50]);
        assert_eq!(user.home, "/home/alice");
        assert_eq!(user.shell, "/bin/sh");
    }

    #[test]
    fn unknown_user_is_none() {
        assert_eq!(User::from_files(PASSWD, GROUP, "bob"), None);
    }
}
