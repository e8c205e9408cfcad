//! File access to a build rootfs from the host, confined to it.
//!
//! Every path is resolved with `openat2(RESOLVE_IN_ROOT)`: `..` and absolute symlinks inside the
//! image resolve against the rootfs, never the host, so a hostile image cannot redirect a write.
//! `/tmp` of the rootfs is a scratch folder outside it (bind-mounted there for commands), so what
//! roles leave in `/tmp` never lands in a layer.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

use crate::become_user::{User, UserGuard};

/// An error from a rootfs file operation, with the rootfs-relative path.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct FsError {
    /// The path inside the rootfs.
    pub path: String,
    /// What failed.
    pub source: std::io::Error,
}

/// `Result` with [`FsError`].
pub type FsResult<T> = Result<T, FsError>;

/// `openat2(RESOLVE_IN_ROOT)`, retried on `EAGAIN`: the kernel answers that when a rename or
/// mount anywhere on the machine raced the lookup (openat2(2)), which a busy build host sees.
fn open_in_root(
    base: impl AsFd,
    path: &Path,
    flags: OFlags,
    mode: Mode,
) -> std::io::Result<OwnedFd> {
    let mut attempts = 0;
    loop {
        match rustix::fs::openat2(&base, path, flags, mode, ResolveFlags::IN_ROOT) {
            Err(rustix::io::Errno::AGAIN) if attempts < 64 => attempts += 1,
            other => return Ok(other?),
        }
    }
}

fn err(path: &Path, source: impl Into<std::io::Error>) -> FsError {
    FsError {
        path: path.display().to_string(),
        source: source.into(),
    }
}

/// What is at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (not followed).
    Symlink,
    /// A device, fifo or socket.
    Other,
}

/// `lstat` of a path in the rootfs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// What it is.
    pub kind: Kind,
    /// Permission bits (with setuid/setgid/sticky).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, seconds.
    pub mtime: i64,
    /// Access time, seconds.
    pub atime: i64,
    /// Status change time, seconds.
    pub ctime: i64,
    /// Nanoseconds of `mtime`, `atime` and `ctime`.
    pub nsecs: [i64; 3],
    /// The file-type bits of `st_mode` (`S_IFMT`), for the kinds [`Kind`] folds into `Other`.
    pub format: u32,
    /// The device it is on.
    pub dev: u64,
    /// The device it is, for a device node.
    pub rdev: u64,
    /// 512-byte blocks allocated.
    pub blocks: u64,
    /// Preferred I/O block size.
    pub block_size: u64,
    /// Inode number (hard links share it).
    pub ino: u64,
    /// Hard links to it.
    pub nlink: u64,
}

/// A rootfs folder on the host, with its `/tmp` kept in a scratch folder.
#[derive(Debug)]
pub struct RootFs {
    root: PathBuf,
    root_fd: OwnedFd,
    /// `/tmp` redirection: the scratch folder (none for plain folders such as image outputs).
    scratch_fd: Option<OwnedFd>,
    /// The user whose credentials file operations take (`become_user`); root's otherwise.
    user: Option<User>,
}

fn open_dir_fd(path: &Path) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Splits an absolute rootfs path into its normal components, refusing `..` above `/`.
fn components(path: &Path) -> std::io::Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => out.push(n.to_string_lossy().into_owned()),
            Component::ParentDir => {
                if out.pop().is_none() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "path climbs above /",
                    ));
                }
            }
            Component::Prefix(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "not a unix path",
                ))
            }
        }
    }
    Ok(out)
}

impl RootFs {
    /// The rootfs at `root`, with `/tmp` in `scratch` (both must exist).
    pub fn new(root: &Path, scratch: &Path) -> std::io::Result<Self> {
        Ok(Self {
            root: root.to_owned(),
            root_fd: open_dir_fd(root)?,
            scratch_fd: Some(open_dir_fd(scratch)?),
            user: None,
        })
    }

    /// A plain folder: every path, `/tmp` too, is inside `root` (layers applied to an output).
    pub fn plain(root: &Path) -> std::io::Result<Self> {
        Ok(Self {
            root: root.to_owned(),
            root_fd: open_dir_fd(root)?,
            scratch_fd: None,
            user: None,
        })
    }

    /// The same rootfs, whose file operations are `user`'s: the kernel checks its access and
    /// makes files owned by it.
    pub fn for_user(&self, user: User) -> FsResult<RootFs> {
        let dup = |fd: &OwnedFd| fd.try_clone().map_err(|e| err(&self.root, e));
        Ok(RootFs {
            root: self.root.clone(),
            root_fd: dup(&self.root_fd)?,
            scratch_fd: self.scratch_fd.as_ref().map(dup).transpose()?,
            user: Some(user),
        })
    }

    /// The user's credentials on this thread for one operation, when there is a user.
    fn user_guard(&self, path: &Path) -> FsResult<Option<UserGuard>> {
        match &self.user {
            None => Ok(None),
            Some(user) => UserGuard::enter(user).map_err(|e| err(path, e)),
        }
    }

    /// The rootfs folder on the host.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The base fd and the path relative to it for a rootfs path (`/tmp/...` goes to scratch).
    fn base(&self, path: &Path) -> std::io::Result<(&OwnedFd, PathBuf)> {
        let parts = components(path)?;
        if let Some(scratch) = self
            .scratch_fd
            .as_ref()
            .filter(|_| parts.first().map(String::as_str) == Some("tmp"))
        {
            return Ok((scratch, parts[1..].iter().collect()));
        }
        Ok((&self.root_fd, parts.iter().collect()))
    }

    /// Opens the parent folder of `path` (resolved in the root) and returns it with the last name.
    fn parent(&self, path: &Path) -> std::io::Result<(OwnedFd, String)> {
        let (base, rel) = self.base(path)?;
        let name = rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "no file name (the root itself)",
                )
            })?;
        let parent = rel.parent().map(Path::to_path_buf).unwrap_or_default();
        let parent = if parent.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            parent
        };
        let fd = open_in_root(
            base,
            &parent,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok((fd, name))
    }

    fn open(&self, path: &Path, flags: OFlags, mode: u32) -> std::io::Result<OwnedFd> {
        match self.open_at_base(path, flags, mode) {
            // A link into `/tmp` names the scratch folder, which in-root resolution cannot
            // reach: follow the links here and open what they name.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && self.scratch_fd.is_some() => {
                let resolved = self
                    .resolve(path)
                    .map_err(|_| std::io::Error::from(std::io::ErrorKind::NotFound))?;
                if resolved == path {
                    return Err(e);
                }
                self.open_at_base(&resolved, flags, mode)
            }
            other => other,
        }
    }

    fn open_at_base(&self, path: &Path, flags: OFlags, mode: u32) -> std::io::Result<OwnedFd> {
        let (base, rel) = self.base(path)?;
        let rel = if rel.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            rel
        };
        open_in_root(
            base,
            &rel,
            flags | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )
    }

    /// `lstat`; `None` when nothing is there.
    pub fn meta(&self, path: &Path) -> FsResult<Option<Meta>> {
        let _user = self.user_guard(path)?;
        let (fd, name) = match self.parent(path) {
            Ok(v) => v,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(20) => {
                return Ok(None)
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                // The root itself.
                let st = rustix::fs::fstat(&self.root_fd).map_err(|e| err(path, e))?;
                return Ok(Some(meta_of(&st)));
            }
            Err(e) => return Err(err(path, e)),
        };
        match rustix::fs::statat(&fd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(meta_of(&st))),
            Err(rustix::io::Errno::NOENT) | Err(rustix::io::Errno::NOTDIR) => Ok(None),
            Err(e) => Err(err(path, e)),
        }
    }

    /// `stat`, following symlinks inside the rootfs.
    pub fn meta_follow(&self, path: &Path) -> FsResult<Option<Meta>> {
        let _user = self.user_guard(path)?;
        if self.scratch_fd.is_some() {
            // A link may point into `/tmp`, which the kernel's in-root resolution would look
            // for in the root rather than in the scratch folder: follow links here instead.
            return self.meta(&self.resolve(path)?);
        }
        match self.open(path, OFlags::PATH, 0) {
            Ok(fd) => rustix::fs::fstat(&fd)
                .map(|st| Some(meta_of(&st)))
                .map_err(|e| err(path, e)),
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    || e.raw_os_error() == Some(20)
                    || e.raw_os_error() == Some(40) =>
            {
                Ok(None)
            }
            Err(e) => Err(err(path, e)),
        }
    }

    /// Whether anything (even a dangling symlink) is at `path`.
    pub fn exists(&self, path: &Path) -> FsResult<bool> {
        Ok(self.meta(path)?.is_some())
    }

    /// The bytes of a file (following symlinks inside the rootfs).
    pub fn read(&self, path: &Path) -> FsResult<Vec<u8>> {
        let _user = self.user_guard(path)?;
        let fd = self
            .open(path, OFlags::RDONLY, 0)
            .map_err(|e| err(path, e))?;
        let mut file = std::fs::File::from(fd);
        let mut out = Vec::new();
        file.read_to_end(&mut out).map_err(|e| err(path, e))?;
        Ok(out)
    }

    /// A file's text, or `None` when it does not exist.
    pub fn read_text_opt(&self, path: &Path) -> FsResult<Option<String>> {
        match self.read(path) {
            Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
            Err(e) if e.source.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Opens a file for reading (following symlinks inside the rootfs).
    pub fn open_read(&self, path: &Path) -> FsResult<std::fs::File> {
        let _user = self.user_guard(path)?;
        Ok(std::fs::File::from(
            self.open(path, OFlags::RDONLY, 0)
                .map_err(|e| err(path, e))?,
        ))
    }

    /// Writes `bytes` to `path` through a temporary file and a rename (a symlink at `path` is
    /// replaced, not followed). Sets `mode` when given, else keeps the old file's mode or 0644.
    pub fn write_atomic(&self, path: &Path, bytes: &[u8], mode: Option<u32>) -> FsResult<()> {
        self.write_from(path, &mut &bytes[..], mode)
    }

    /// Streams `reader` into `path` as [`RootFs::write_atomic`] does.
    pub fn write_from(
        &self,
        path: &Path,
        reader: &mut dyn Read,
        mode: Option<u32>,
    ) -> FsResult<()> {
        let _user = self.user_guard(path)?;
        let (dir, name) = self.parent(path).map_err(|e| err(path, e))?;
        let old_mode = rustix::fs::statat(&dir, name.as_str(), AtFlags::empty())
            .ok()
            .map(|st| st.st_mode & 0o7777);
        let mode = mode.or(old_mode).unwrap_or(0o644);
        let tmp_name = format!(".{name}.imgbuild-{}", std::process::id());
        let fd = rustix::fs::openat(
            &dir,
            tmp_name.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| err(path, e))?;
        let mut file = std::fs::File::from(fd);
        let result = std::io::copy(reader, &mut file)
            .and_then(|_| file.flush())
            .and_then(|_| Ok(rustix::fs::fchmod(file.as_fd(), Mode::from_raw_mode(mode))?))
            .and_then(|_| {
                Ok(rustix::fs::renameat(
                    &dir,
                    tmp_name.as_str(),
                    &dir,
                    name.as_str(),
                )?)
            });
        if let Err(e) = result {
            let _ = rustix::fs::unlinkat(&dir, tmp_name.as_str(), AtFlags::empty());
            return Err(err(path, e));
        }
        Ok(())
    }

    /// Creates `path` and its missing parents as folders with `mode`; `true` if anything was made.
    pub fn mkdir_all(&self, path: &Path, mode: u32) -> FsResult<bool> {
        let _user = self.user_guard(path)?;
        let parts = components(path).map_err(|e| err(path, e))?;
        let mut current = PathBuf::from("/");
        let mut made = false;
        for part in parts {
            current.push(part);
            match self.meta_follow(&current)? {
                Some(m) if m.kind == Kind::Dir => continue,
                Some(_) => {
                    return Err(err(
                        &current,
                        std::io::Error::new(
                            std::io::ErrorKind::AlreadyExists,
                            "exists and is not a folder",
                        ),
                    ))
                }
                None => {
                    let (dir, name) = self.parent(&current).map_err(|e| err(&current, e))?;
                    match rustix::fs::mkdirat(&dir, name.as_str(), Mode::from_raw_mode(mode)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(err(&current, e)),
                    }
                    // mkdir is subject to the umask; set the mode exactly.
                    self.chmod(&current, mode)?;
                    made = true;
                }
            }
        }
        Ok(made)
    }

    /// Creates a symlink at `path` pointing to `target` (replacing a file or link there).
    pub fn symlink(&self, target: &str, path: &Path) -> FsResult<()> {
        let _user = self.user_guard(path)?;
        let (dir, name) = self.parent(path).map_err(|e| err(path, e))?;
        let tmp_name = format!(".{name}.imgbuild-link-{}", std::process::id());
        let _ = rustix::fs::unlinkat(&dir, tmp_name.as_str(), AtFlags::empty());
        rustix::fs::symlinkat(target, &dir, tmp_name.as_str()).map_err(|e| err(path, e))?;
        rustix::fs::renameat(&dir, tmp_name.as_str(), &dir, name.as_str()).map_err(|e| err(path, e))
    }

    /// Sets an extended attribute (following symlinks inside the rootfs).
    pub fn set_xattr(&self, path: &Path, name: &str, value: &[u8]) -> FsResult<()> {
        let _user = self.user_guard(path)?;
        let fd = self.open(path, OFlags::PATH, 0).map_err(|e| err(path, e))?;
        let proc_path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
        rustix::fs::setxattr(
            proc_path.as_str(),
            name,
            value,
            rustix::fs::XattrFlags::empty(),
        )
        .map_err(|e| err(path, e))
    }

    /// Creates a device node or fifo.
    pub fn mknod(
        &self,
        path: &Path,
        kind: rustix::fs::FileType,
        mode: u32,
        dev: u64,
    ) -> FsResult<()> {
        let _user = self.user_guard(path)?;
        let (dir, name) = self.parent(path).map_err(|e| err(path, e))?;
        let made = rustix::fs::mknodat(&dir, name.as_str(), kind, Mode::from_raw_mode(mode), dev);
        let device = match kind {
            rustix::fs::FileType::CharacterDevice if dev != 0 => oci_layout::DeviceKind::Char,
            rustix::fs::FileType::BlockDevice => oci_layout::DeviceKind::Block,
            _ => return made.map_err(|e| err(path, e)),
        };
        match made {
            // Rootless: the kernel makes no devices in a user namespace; a stand-in keeps it.
            Err(rustix::io::Errno::PERM) if oci_layout::in_user_namespace() => {
                let stand_in = oci_layout::DeviceStandIn {
                    kind: device,
                    major: rustix::fs::major(dev),
                    minor: rustix::fs::minor(dev),
                };
                let file = rustix::fs::openat(
                    &dir,
                    name.as_str(),
                    OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
                    Mode::from_raw_mode(mode & 0o7777),
                )
                .map_err(|e| err(path, e))?;
                rustix::fs::fsetxattr(
                    &file,
                    oci_layout::DEVICE_XATTR,
                    stand_in.encode().as_bytes(),
                    rustix::fs::XattrFlags::empty(),
                )
                .map_err(|e| err(path, e))
            }
            other => other.map_err(|e| err(path, e)),
        }
    }

    /// Creates a hard link at `path` to the existing `existing` (both rootfs paths).
    pub fn hardlink(&self, existing: &Path, path: &Path) -> FsResult<()> {
        let _user = self.user_guard(path)?;
        let (src_dir, src_name) = self.parent(existing).map_err(|e| err(existing, e))?;
        let (dir, name) = self.parent(path).map_err(|e| err(path, e))?;
        let _ = rustix::fs::unlinkat(&dir, name.as_str(), AtFlags::empty());
        rustix::fs::linkat(
            &src_dir,
            src_name.as_str(),
            &dir,
            name.as_str(),
            AtFlags::empty(),
        )
        .map_err(|e| err(path, e))
    }

    /// The target of a symlink.
    pub fn read_link(&self, path: &Path) -> FsResult<String> {
        let _user = self.user_guard(path)?;
        let (dir, name) = self.parent(path).map_err(|e| err(path, e))?;
        let target =
            rustix::fs::readlinkat(&dir, name.as_str(), Vec::new()).map_err(|e| err(path, e))?;
        Ok(target.to_string_lossy().into_owned())
    }

    /// `path` with every symlink resolved inside the rootfs (absolute targets from its root),
    /// as Python's `os.path.realpath`: a part that does not exist is kept as written.
    pub fn resolve(&self, path: &Path) -> FsResult<PathBuf> {
        let _user = self.user_guard(path)?;
        fn parts(path: &Path) -> std::collections::VecDeque<String> {
            path.components()
                .filter_map(|c| match c {
                    Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                    Component::ParentDir => Some("..".into()),
                    _ => None,
                })
                .collect()
        }
        let mut out = PathBuf::from("/");
        let mut rest = parts(path);
        let mut hops = 0;
        while let Some(part) = rest.pop_front() {
            if part == ".." {
                out.pop();
                continue;
            }
            let next = out.join(&part);
            match self.meta(&next)? {
                Some(m) if m.kind == Kind::Symlink && hops < 40 => {
                    hops += 1;
                    let target = PathBuf::from(self.read_link(&next)?);
                    if target.is_absolute() {
                        out = PathBuf::from("/");
                    }
                    let mut ahead = parts(&target);
                    ahead.extend(rest);
                    rest = ahead;
                }
                _ => out = next,
            }
        }
        Ok(out)
    }

    /// Removes a file, link or whole folder; `true` if something was there.
    pub fn remove_all(&self, path: &Path) -> FsResult<bool> {
        let _user = self.user_guard(path)?;
        let Some(meta) = self.meta(path)? else {
            return Ok(false);
        };
        if meta.kind == Kind::Dir {
            for child in self.list(path)? {
                self.remove_all(&path.join(child))?;
            }
            let (dir, name) = self.parent(path).map_err(|e| err(path, e))?;
            rustix::fs::unlinkat(&dir, name.as_str(), AtFlags::REMOVEDIR)
                .map_err(|e| err(path, e))?;
        } else {
            let (dir, name) = self.parent(path).map_err(|e| err(path, e))?;
            rustix::fs::unlinkat(&dir, name.as_str(), AtFlags::empty())
                .map_err(|e| err(path, e))?;
        }
        Ok(true)
    }

    /// The names in a folder, sorted.
    pub fn list(&self, path: &Path) -> FsResult<Vec<String>> {
        let _user = self.user_guard(path)?;
        let fd = self
            .open(path, OFlags::RDONLY | OFlags::DIRECTORY, 0)
            .map_err(|e| err(path, e))?;
        let dir = rustix::fs::Dir::read_from(&fd).map_err(|e| err(path, e))?;
        let mut names = Vec::new();
        for entry in dir {
            let entry = entry.map_err(|e| err(path, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name != "." && name != ".." {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Sets permission bits (following symlinks inside the rootfs, as chmod does).
    pub fn chmod(&self, path: &Path, mode: u32) -> FsResult<()> {
        let _user = self.user_guard(path)?;
        let fd = self.open(path, OFlags::PATH, 0).map_err(|e| err(path, e))?;
        // fchmod does not take O_PATH fds; go through the fd's /proc link, which stays inside.
        let proc_path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
        rustix::fs::chmod(proc_path.as_str(), Mode::from_raw_mode(mode)).map_err(|e| err(path, e))
    }

    /// Sets owner and group (of the link itself for symlinks).
    pub fn chown(&self, path: &Path, uid: Option<u32>, gid: Option<u32>) -> FsResult<()> {
        let _user = self.user_guard(path)?;
        let (dir, name) = self.parent(path).map_err(|e| err(path, e))?;
        rustix::fs::chownat(
            &dir,
            name.as_str(),
            uid.map(rustix::fs::Uid::from_raw),
            gid.map(rustix::fs::Gid::from_raw),
            AtFlags::SYMLINK_NOFOLLOW,
        )
        .map_err(|e| err(path, e))
    }

    /// Sets access and modification times to now, as `utime(path, NULL)` does (which needs
    /// only write access, not ownership).
    pub fn set_times_now(&self, path: &Path) -> FsResult<()> {
        let now = (0, rustix::fs::UTIME_NOW);
        self.set_times_exact(path, now, now)
    }

    /// Sets access and modification times, each as (seconds, nanoseconds), of the path itself
    /// (not followed).
    pub fn set_times_exact(
        &self,
        path: &Path,
        atime: (i64, i64),
        mtime: (i64, i64),
    ) -> FsResult<()> {
        let _user = self.user_guard(path)?;
        let (dir, name) = self.parent(path).map_err(|e| err(path, e))?;
        let spec = |(tv_sec, tv_nsec): (i64, i64)| rustix::fs::Timespec { tv_sec, tv_nsec };
        let ts = rustix::fs::Timestamps {
            last_access: spec(atime),
            last_modification: spec(mtime),
        };
        rustix::fs::utimensat(&dir, name.as_str(), &ts, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| err(path, e))
    }

    /// Sets a file's modification and access time.
    pub fn set_times(&self, path: &Path, seconds: i64) -> FsResult<()> {
        let _user = self.user_guard(path)?;
        let (dir, name) = self.parent(path).map_err(|e| err(path, e))?;
        let ts = rustix::fs::Timestamps {
            last_access: rustix::fs::Timespec {
                tv_sec: seconds,
                tv_nsec: 0,
            },
            last_modification: rustix::fs::Timespec {
                tv_sec: seconds,
                tv_nsec: 0,
            },
        };
        rustix::fs::utimensat(&dir, name.as_str(), &ts, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| err(path, e))
    }

    /// Copies a file of the host into the rootfs.
    pub fn copy_in(&self, host_file: &Path, path: &Path, mode: Option<u32>) -> FsResult<()> {
        let mut file = std::fs::File::open(host_file).map_err(|e| err(host_file, e))?;
        self.write_from(path, &mut file, mode)
    }
}

fn meta_of(st: &rustix::fs::Stat) -> Meta {
    let kind = match rustix::fs::FileType::from_raw_mode(st.st_mode) {
        rustix::fs::FileType::RegularFile => Kind::File,
        rustix::fs::FileType::Directory => Kind::Dir,
        rustix::fs::FileType::Symlink => Kind::Symlink,
        _ => Kind::Other,
    };
    Meta {
        kind,
        mode: st.st_mode & 0o7777,
        uid: st.st_uid,
        gid: st.st_gid,
        size: st.st_size as u64,
        mtime: st.st_mtime,
        atime: st.st_atime,
        ctime: st.st_ctime,
        nsecs: [
            st.st_mtime_nsec as i64,
            st.st_atime_nsec as i64,
            st.st_ctime_nsec as i64,
        ],
        format: st.st_mode & 0o170_000,
        dev: st.st_dev,
        rdev: st.st_rdev,
        blocks: st.st_blocks as u64,
        block_size: st.st_blksize as u64,
        ino: st.st_ino,
        nlink: st.st_nlink,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs() -> (tempfile::TempDir, RootFs) {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("root/etc")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("scratch")).expect("mkdir");
        let fs =
            RootFs::new(&dir.path().join("root"), &dir.path().join("scratch")).expect("rootfs");
        (dir, fs)
    }

    #[test]
    fn absolute_symlinks_resolve_inside_the_root() {
        let (dir, fs) = fs();
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).expect("mkdir");
        // A link that points at the host's folder by absolute path...
        std::os::unix::fs::symlink(&outside, dir.path().join("root/escape")).expect("link");
        fs.write_atomic(Path::new("/escape/x"), b"data", None)
            .expect_err("the host folder is not inside the root");
        // ...and one that climbs with ..: both stay in the root.
        std::os::unix::fs::symlink("../../../..", dir.path().join("root/etc/up")).expect("link");
        fs.mkdir_all(Path::new("/etc/up/made"), 0o755)
            .expect("mkdir inside");
        assert!(dir.path().join("root/made").is_dir());
        assert!(!outside.join("x").exists());
    }

    #[test]
    fn tmp_goes_to_scratch() {
        let (dir, fs) = fs();
        fs.write_atomic(Path::new("/tmp/a"), b"1", Some(0o600))
            .expect("write");
        assert!(dir.path().join("scratch/a").is_file());
        assert!(!dir.path().join("root/tmp/a").exists());
        assert_eq!(
            fs.meta(Path::new("/tmp/a")).expect("meta").map(|m| m.mode),
            Some(0o600)
        );
    }

    #[test]
    fn write_replaces_a_symlink_instead_of_following_it() {
        let (dir, fs) = fs();
        std::fs::write(dir.path().join("root/etc/real"), "real").expect("write");
        std::os::unix::fs::symlink("real", dir.path().join("root/etc/link")).expect("link");
        fs.write_atomic(Path::new("/etc/link"), b"new", None)
            .expect("write");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("root/etc/real")).expect("read"),
            "real"
        );
        assert_eq!(
            fs.meta(Path::new("/etc/link"))
                .expect("meta")
                .map(|m| m.kind),
            Some(Kind::File)
        );
    }

    #[test]
    fn remove_and_list() {
        let (_dir, fs) = fs();
        fs.mkdir_all(Path::new("/a/b/c"), 0o750).expect("mkdir");
        fs.write_atomic(Path::new("/a/b/c/f"), b"x", None)
            .expect("write");
        assert_eq!(
            fs.meta(Path::new("/a/b")).expect("meta").map(|m| m.mode),
            Some(0o750)
        );
        assert_eq!(fs.list(Path::new("/a/b")).expect("list"), vec!["c"]);
        assert!(fs.remove_all(Path::new("/a")).expect("rm"));
        assert!(!fs.exists(Path::new("/a")).expect("exists"));
        assert!(!fs.remove_all(Path::new("/a")).expect("rm again"));
        assert!(components(Path::new("/../x")).is_err());
    }
}
