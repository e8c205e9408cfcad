//! The chroot sandbox: commands run in a chroot inside a private mount and PID namespace.
//!
//! imgbuild starts itself as `__sandbox`, which unshares a mount and a PID namespace, makes `/`
//! private and starts `__sandbox-init`: PID 1 of the new namespace. Init mounts `proc`, `sysfs`,
//! a bind of `/dev`, a tmpfs on `/run` (with the `uname` that answers with the pinned kernel,
//! see `pinned_uname`), the scratch folder on `/tmp` and the host's
//! `resolv.conf`, chroots, and then runs one command per request line on its standard input,
//! answering with one line on its standard output. One sandbox serves a whole role.
//!
//! Nothing can outlive the build: each process asks for SIGKILL when its parent dies, and when
//! init dies the kernel kills every process of its PID namespace, which ends the mount namespace
//! and every mount in it. The host's mount table never sees them.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::compile_cache::CompileCache;
use crate::live_output::{drain, OutputSink, Progress, Throttle};
use crate::package_cache::{PackageCache, APT_ARCHIVES};
use crate::rootfs::RootFs;
use crate::target::{Cmd, CmdOutput, Target, TargetError};

/// The hidden first argument that makes imgbuild act as the sandbox helper.
pub const HELPER_ARG: &str = "__sandbox";
/// The hidden first argument of the sandbox's PID 1.
pub const INIT_ARG: &str = "__sandbox-init";
const CONFIG_ENV: &str = "IMGBUILD_SANDBOX";
/// The file in the sandbox's `/run` that holds the environment its commands run with
/// (`NAME=value` lines: `PATH`, `KERNEL_VERSION`), for a command that enters the sandbox from
/// outside (`sandbox_enter`).
pub(crate) const ENV_FILE: &str = "imgbuild-env";

pub use crate::target::{not_found, BASE_PATH};

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Config {
    root: PathBuf,
    scratch: PathBuf,
    kernel_version: String,
    overlay: Option<Overlay>,
    package_cache: Option<PackageCache>,
    compile_cache: Option<CompileCache>,
}

/// An overlay mounted on the sandbox's root, inside its private namespace: the role's changes
/// land in `upper`, over the read-only `lowers` (topmost first).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Overlay {
    /// Lower layers, topmost first.
    pub lowers: Vec<PathBuf>,
    /// Where changes go.
    pub upper: PathBuf,
    /// overlayfs's work folder (same filesystem as `upper`).
    pub work: PathBuf,
}

/// What a sandbox is made of.
#[derive(Debug, Clone)]
pub struct SandboxSpec {
    /// The rootfs folder (with `overlay`, the empty folder the overlay is mounted on).
    pub root: PathBuf,
    /// The folder that is `/tmp` inside.
    pub scratch: PathBuf,
    /// The pinned kernel (`KERNEL_VERSION`).
    pub kernel_version: String,
    /// Capture changes in an overlay instead of writing to `root`.
    pub overlay: Option<Overlay>,
    /// The shared package download cache, mounted on the image's apt archives folder when the
    /// image has one.
    pub package_cache: Option<PackageCache>,
    /// The compile cache the image's compilers go through (none: they run as they are).
    pub compile_cache: Option<CompileCache>,
    /// A folder of the building machine, outside the image and its `/tmp`, for the files of
    /// tools that reach the sandbox from outside (ansible-playbook's play, for an action
    /// plugin); none: the machine's temporary folder.
    pub host_work: Option<PathBuf>,
}

/// The sandbox helper's first line: ready, or why not.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Hello {
    Ready,
    /// overlayfs could not be mounted on the root (the caller may run the role in a copy).
    NoOverlay(String),
    Fatal(String),
}

impl Hello {
    /// What the helper's first line means for the caller; `None` when it is no hello at all.
    fn outcome(line: &str) -> Option<Result<(), TargetError>> {
        Some(match serde_json::from_str::<Hello>(line).ok()? {
            Hello::Ready => Ok(()),
            Hello::NoOverlay(message) => Err(TargetError::NoOverlay(message)),
            Hello::Fatal(message) => Err(TargetError::Sandbox(message)),
        })
    }
}

#[derive(Debug)]
struct Channel {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// A build rootfs entered through the sandbox.
#[derive(Debug)]
pub struct ChrootTarget {
    fs: RootFs,
    kernel_version: String,
    channel: Mutex<Option<Channel>>,
    output: Sink,
    package_cache: Option<PackageCache>,
    /// The sandbox's PID 1, as the building machine numbers it.
    init: Option<u32>,
    /// See [`SandboxSpec::host_work`].
    host_work: Option<PathBuf>,
}

/// Where the lines of a running command go (nowhere by default).
#[derive(Default)]
struct Sink(Option<OutputSink>);

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Sink(set)"
        } else {
            "Sink(none)"
        })
    }
}

impl ChrootTarget {
    /// Starts a sandbox on `root` with `/tmp` in `scratch`. `exe` is the imgbuild binary.
    pub fn start(
        exe: &Path,
        root: &Path,
        scratch: &Path,
        kernel_version: &str,
    ) -> Result<Self, TargetError> {
        let spec = SandboxSpec {
            root: root.to_owned(),
            scratch: scratch.to_owned(),
            kernel_version: kernel_version.to_owned(),
            overlay: None,
            package_cache: None,
            compile_cache: None,
            host_work: None,
        };
        Self::start_spec(exe, &spec)
    }

    /// Starts a sandbox as `spec` says. With an overlay, host-side file access goes through
    /// `/proc/<init>/root`, the merged view that exists only inside the sandbox's namespace.
    pub fn start_spec(exe: &Path, spec: &SandboxSpec) -> Result<Self, TargetError> {
        let root = spec.root.as_path();
        let kernel_version = spec.kernel_version.as_str();
        let config = Config {
            root: spec.root.clone(),
            scratch: spec.scratch.clone(),
            kernel_version: spec.kernel_version.clone(),
            overlay: spec.overlay.clone(),
            package_cache: spec.package_cache.clone(),
            compile_cache: spec.compile_cache.clone(),
        };
        let config =
            serde_json::to_string(&config).map_err(|e| TargetError::Sandbox(e.to_string()))?;
        let mut child = Command::new(exe)
            .arg(HELPER_ARG)
            .env_clear()
            .env(CONFIG_ENV, config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| TargetError::Sandbox(format!("cannot start {}: {e}", exe.display())))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(TargetError::Sandbox("no pipes to the sandbox".into()));
        };
        let mut channel = Channel {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        };
        let mut line = String::new();
        channel
            .stdout
            .read_line(&mut line)
            .map_err(|e| TargetError::Sandbox(e.to_string()))?;
        match Hello::outcome(&line) {
            Some(outcome) => outcome?,
            None => {
                let status = channel
                    .child
                    .wait()
                    .map(|s| s.to_string())
                    .unwrap_or_default();
                return Err(TargetError::Sandbox(format!(
                    "the sandbox exited before it was ready ({status})"
                )));
            }
        }
        let helper = channel.child.id();
        let init: Option<u32> =
            std::fs::read_to_string(format!("/proc/{helper}/task/{helper}/children"))
                .ok()
                .and_then(|children| children.split_whitespace().next()?.parse().ok());
        let view = match (&spec.overlay, init) {
            (None, _) => root.to_owned(),
            (Some(_), Some(init)) => PathBuf::from(format!("/proc/{init}/root")),
            (Some(_), None) => {
                return Err(TargetError::Sandbox(
                    "cannot find the sandbox's init process".into(),
                ))
            }
        };
        let fs = RootFs::new(&view, &spec.scratch)
            .map_err(|e| TargetError::Sandbox(format!("{}: {e}", view.display())))?;
        Ok(Self {
            fs,
            kernel_version: kernel_version.to_owned(),
            channel: Mutex::new(Some(channel)),
            output: Sink::default(),
            package_cache: spec.package_cache.clone(),
            init,
            host_work: spec.host_work.clone(),
        })
    }

    /// Hands the newest line of each running command's output to `sink` (about once a second).
    pub fn with_output(mut self, sink: Option<OutputSink>) -> Self {
        self.output = Sink(sink);
        self
    }

    /// Ends the sandbox (also done on drop).
    pub fn stop(&self) {
        let mut guard = self.channel.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(mut channel) = guard.take() {
            drop(channel.stdin);
            let _ = channel.child.wait();
        }
    }

    /// What this sandbox's compiles found in the compile cache so far.
    pub fn compile_log(&self) -> crate::compile_cache::CompileLog {
        crate::compile_cache::CompileLog::of(&self.fs)
    }

    /// The pinned kernel commands see as `KERNEL_VERSION`.
    pub fn kernel_version(&self) -> &str {
        &self.kernel_version
    }
}

impl Drop for ChrootTarget {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Target for ChrootTarget {
    fn run(&self, cmd: &Cmd) -> Result<CmdOutput, TargetError> {
        let mut guard = self.channel.lock().unwrap_or_else(|e| e.into_inner());
        let channel = guard
            .as_mut()
            .ok_or_else(|| TargetError::Sandbox("the sandbox was stopped".into()))?;
        let request =
            serde_json::to_string(cmd).map_err(|e| TargetError::Sandbox(e.to_string()))?;
        writeln!(channel.stdin, "{request}")
            .and_then(|_| channel.stdin.flush())
            .map_err(|e| TargetError::Sandbox(format!("the sandbox is gone: {e}")))?;
        let mut line = String::new();
        loop {
            line.clear();
            let read = channel
                .stdout
                .read_line(&mut line)
                .map_err(|e| TargetError::Sandbox(e.to_string()))?;
            if read == 0 {
                return Err(TargetError::Sandbox(
                    "the sandbox died while running a command".into(),
                ));
            }
            match Progress::parse(&line) {
                Some(progress) => {
                    if let Some(sink) = &self.output.0 {
                        sink(&progress);
                    }
                }
                None => break,
            }
        }
        if let Some(cache) = &self.package_cache {
            // Best effort: a package the pool misses is downloaded again by the next build.
            let _ = cache.harvest();
        }
        serde_json::from_str(&line)
            .map_err(|e| TargetError::Sandbox(format!("bad answer from the sandbox: {e}")))
    }

    fn fs(&self) -> &RootFs {
        &self.fs
    }

    fn sandbox_init(&self) -> Option<u32> {
        self.init
    }

    fn host_work(&self) -> Option<&Path> {
        self.host_work.as_deref()
    }
}

fn die_with_parent() -> Result<(), String> {
    let parent = rustix::process::getppid();
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|e| format!("prctl: {e}"))?;
    // The parent may have died before the call: then we were re-parented already.
    if rustix::process::getppid() != parent {
        return Err("the parent exited".into());
    }
    Ok(())
}

fn hello(message: &Hello) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{}",
        serde_json::to_string(message).unwrap_or_default()
    );
    let _ = out.flush();
}

/// Entry point of `imgbuild __sandbox`: new namespaces, then PID 1 in them. Returns the exit code.
pub fn helper_main() -> i32 {
    let result = (|| -> Result<i32, String> {
        die_with_parent()?;
        // Named before the new mount namespace: in a chroot (a container, a minimal host's root)
        // /proc/self/exe may name the binary by a path outside the root once it is unshared.
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        // SAFETY: unshare is only unsafe with CLONE_FILES (fd tables shared between threads);
        // this process is single-threaded here and unshares only the mount and PID namespaces.
        #[allow(unsafe_code)]
        unsafe {
            rustix::thread::unshare_unsafe(
                rustix::thread::UnshareFlags::NEWNS | rustix::thread::UnshareFlags::NEWPID,
            )
        }
        .map_err(|e| format!("unshare (imgbuild must run as root): {e}"))?;
        rustix::mount::mount_change(
            "/",
            rustix::mount::MountPropagationFlags::PRIVATE
                | rustix::mount::MountPropagationFlags::REC,
        )
        .map_err(|e| format!("making / private: {e}"))?;
        let status = Command::new(exe)
            .arg(INIT_ARG)
            .status()
            .map_err(|e| format!("starting init: {e}"))?;
        Ok(status.code().unwrap_or(1))
    })();
    match result {
        Ok(code) => code,
        Err(message) => {
            hello(&Hello::Fatal(message));
            1
        }
    }
}

fn mount_point(root: &Path, inside: &str, mode: u32) -> Result<PathBuf, String> {
    let path = root.join(inside.trim_start_matches('/'));
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_dir() => Ok(path),
        Ok(_) => Err(format!(
            "/{inside} in the rootfs is not a folder; a base image must have a real /{inside}"
        )),
        Err(_) => {
            std::fs::create_dir(&path).map_err(|e| format!("creating /{inside}: {e}"))?;
            let _ = std::fs::set_permissions(
                &path,
                <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(mode),
            );
            Ok(path)
        }
    }
}

/// Mounts the role's overlay on the root, when it has one.
fn mount_overlay(config: &Config) -> Result<(), String> {
    use rustix::mount::{mount, MountFlags};
    if let Some(overlay) = &config.overlay {
        let lowers = overlay
            .lowers
            .iter()
            .map(|l| l.display().to_string())
            .collect::<Vec<_>>()
            .join(":");
        let data = format!(
            "lowerdir={lowers},upperdir={},workdir={}{}",
            overlay.upper.display(),
            overlay.work.display(),
            oci_layout::mount_options_suffix()
        );
        let data =
            std::ffi::CString::new(data).map_err(|_| "overlay paths contain a NUL".to_string())?;
        mount(
            "overlay",
            &config.root,
            "overlay",
            MountFlags::empty(),
            Some(data.as_c_str()),
        )
        .map_err(|e| format!("mounting the overlay (is overlayfs available?): {e}"))?;
    }
    Ok(())
}

/// Mounts what a build needs (the overlay is already there) and chroots; returns the `PATH`
/// commands run with.
fn enter(config: &Config) -> Result<String, String> {
    use rustix::mount::{mount, mount_bind, MountFlags};
    let root = &config.root;
    let fail = |what: &str, e: rustix::io::Errno| format!("mounting {what}: {e}");
    if let Some(cache) = &config.package_cache {
        // Without it apt downloads into the image as it always did: not worth failing a build.
        let _ = mount_package_cache(root, cache);
    }
    let proc_dir = mount_point(root, "proc", 0o555)?;
    mount(
        "proc",
        &proc_dir,
        "proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    )
    .map_err(|e| fail("/proc", e))?;
    let sys_dir = mount_point(root, "sys", 0o555)?;
    mount_sys(&sys_dir).map_err(|e| fail("/sys", e))?;
    let dev_dir = mount_point(root, "dev", 0o755)?;
    minimal_dev(&dev_dir)?;
    let path = mount_run(config)?;
    let tmp_dir = mount_point(root, "tmp", 0o1777)?;
    mount_bind(&config.scratch, &tmp_dir).map_err(|e| fail("/tmp", e))?;
    let resolv = root.join("etc/resolv.conf");
    let resolv_is_file = std::fs::symlink_metadata(&resolv)
        .map(|m| m.is_file())
        .unwrap_or(false);
    if resolv_is_file && Path::new("/etc/resolv.conf").exists() {
        mount_bind("/etc/resolv.conf", &resolv).map_err(|e| fail("/etc/resolv.conf", e))?;
    }
    rustix::process::chroot(root).map_err(|e| format!("chroot {}: {e}", root.display()))?;
    rustix::process::chdir("/").map_err(|e| format!("chdir /: {e}"))?;
    Ok(path)
}

/// Mounts a read-only sysfs on `dir`; in a user namespace without a network namespace of its
/// own (rootless), where the kernel refuses a new sysfs, a read-only bind of the host's.
fn mount_sys(dir: &Path) -> rustix::io::Result<()> {
    use rustix::mount::{mount, mount_bind_recursive, mount_remount, MountFlags};
    let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC | MountFlags::RDONLY;
    match mount("sysfs", dir, "sysfs", flags, None) {
        Err(rustix::io::Errno::PERM) if oci_layout::in_user_namespace() => {
            mount_bind_recursive("/sys", dir)?;
            mount_remount(dir, MountFlags::BIND | flags, c"")
        }
        other => other,
    }
}

/// Mounts the sandbox's `/run` tmpfs with imgbuild's shims on it; returns the `PATH` commands
/// run with.
fn mount_run(config: &Config) -> Result<String, String> {
    let root = &config.root;
    let run_dir = mount_point(root, "run", 0o755)?;
    rustix::mount::mount(
        "tmpfs",
        &run_dir,
        "tmpfs",
        rustix::mount::MountFlags::NOSUID | rustix::mount::MountFlags::NODEV,
        Some(c"mode=0755"),
    )
    .map_err(|e| format!("mounting /run: {e}"))?;
    let mut path = crate::pinned_uname::install(&run_dir, &config.kernel_version)?;
    if let Some(cache) = &config.compile_cache {
        // Without it the compilers run as they are: not worth failing a build.
        if let Ok(Some(shims)) = crate::compile_cache::install(root, &run_dir, cache) {
            path = format!("{shims}:{path}");
        }
    }
    crate::initramfs::install_shims(&run_dir)?;
    // For the commands that enter the sandbox from outside (`sandbox_enter`).
    let env = format!("PATH={path}\nKERNEL_VERSION={}\n", config.kernel_version);
    std::fs::write(run_dir.join(ENV_FILE), env)
        .map_err(|e| format!("writing /run/{ENV_FILE}: {e}"))?;
    Ok(path)
}

/// Mounts the package cache's overlay on the image's apt archives folder (where overlayfs cannot
/// be mounted, a bind of the sandbox's own folder), when the image has that folder and it holds
/// no packages (an image without apt gets nothing, and no folder is made in it).
fn mount_package_cache(root: &Path, cache: &PackageCache) -> Result<(), String> {
    let archives = root.join(APT_ARCHIVES);
    let is_dir = std::fs::symlink_metadata(&archives).is_ok_and(|m| m.is_dir());
    // Packages already there stay the image's: hidden under the mount, an `apt-get clean` in a
    // role could not remove them.
    if !is_dir || PackageCache::holds_packages(&archives) {
        return Ok(());
    }
    let data = std::ffi::CString::new(cache.mount_data())
        .map_err(|_| "package cache paths contain a NUL".to_string())?;
    let overlay = rustix::mount::mount(
        "overlay",
        &archives,
        "overlay",
        rustix::mount::MountFlags::NOSUID | rustix::mount::MountFlags::NODEV,
        Some(data.as_c_str()),
    );
    if overlay.is_ok() {
        return Ok(());
    }
    // No overlayfs here: the upper folder, holding links to the pool's packages, takes the
    // archives' place instead, so apt still finds them and the image's folder stays untouched.
    cache
        .link_pool_into_upper()
        .map_err(|e| format!("linking the package pool: {e}"))?;
    rustix::mount::mount_bind(&cache.upper, &archives)
        .map_err(|e| format!("binding the package cache on /{APT_ARCHIVES}: {e}"))
}

/// A private `/dev` with the devices a build needs (null, zero, full, random, urandom, tty, a
/// new pty instance, shm) and none of the host's disks: a task cannot write to the build host's
/// block devices.
fn minimal_dev(dev: &Path) -> Result<(), String> {
    use rustix::fs::{mknodat, symlink, FileType, Mode, CWD};
    use rustix::mount::{mount, MountFlags};
    let fail = |what: &str, e: rustix::io::Errno| format!("making /dev/{what}: {e}");
    mount(
        "tmpfs",
        dev,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NOEXEC,
        Some(c"mode=0755,size=4m"),
    )
    .map_err(|e| fail("", e))?;
    for (name, major, minor) in [
        ("null", 1, 3),
        ("zero", 1, 5),
        ("full", 1, 7),
        ("random", 1, 8),
        ("urandom", 1, 9),
        ("tty", 5, 0),
    ] {
        let path = dev.join(name);
        let made = mknodat(
            CWD,
            &path,
            FileType::CharacterDevice,
            Mode::from_raw_mode(0o666),
            rustix::fs::makedev(major, minor),
        );
        match made {
            // In a user namespace (rootless) devices are bound from the host's, never made.
            Err(rustix::io::Errno::PERM) if oci_layout::in_user_namespace() => {
                std::fs::write(&path, b"").map_err(|e| format!("making /dev/{name}: {e}"))?;
                rustix::mount::mount_bind(Path::new("/dev").join(name), &path)
                    .map_err(|e| fail(name, e))?;
                continue;
            }
            other => other.map_err(|e| fail(name, e))?,
        }
        std::fs::set_permissions(
            &path,
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o666),
        )
        .map_err(|e| format!("making /dev/{name}: {e}"))?;
    }
    for (dir, mode) in [("pts", 0o755), ("shm", 0o1777)] {
        std::fs::create_dir(dev.join(dir)).map_err(|e| format!("making /dev/{dir}: {e}"))?;
        std::fs::set_permissions(
            dev.join(dir),
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(mode),
        )
        .map_err(|e| format!("making /dev/{dir}: {e}"))?;
    }
    mount(
        "devpts",
        dev.join("pts"),
        "devpts",
        MountFlags::NOSUID | MountFlags::NOEXEC,
        Some(c"newinstance,ptmxmode=0666,mode=0620"),
    )
    .map_err(|e| fail("pts", e))?;
    mount(
        "tmpfs",
        dev.join("shm"),
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        Some(c"mode=1777"),
    )
    .map_err(|e| fail("shm", e))?;
    for (name, target) in [
        ("ptmx", "pts/ptmx"),
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        symlink(target, dev.join(name)).map_err(|e| fail(name, e))?;
    }
    Ok(())
}

/// Capabilities no task of an image build needs and that reach past the image: loading a module
/// into the build host's kernel, rebooting it, setting its clock, raw I/O ports. Dropped from the
/// bounding set, so no program the sandbox starts can have them.
pub(crate) fn drop_host_capabilities() -> Result<(), String> {
    use rustix::thread::{remove_capability_from_bounding_set, CapabilitySet};
    for capability in [
        CapabilitySet::SYS_MODULE,
        CapabilitySet::SYS_BOOT,
        CapabilitySet::SYS_TIME,
        CapabilitySet::SYS_RAWIO,
    ] {
        remove_capability_from_bounding_set(capability)
            .map_err(|e| format!("dropping {capability:?}: {e}"))?;
    }
    Ok(())
}

/// Starts `command` as `user` (its ids, its groups, its home), as `sudo -H` does.
fn as_user(command: &mut Command, user: &crate::become_user::User) {
    command.envs(user.env());
    let ids = user.ids();
    // SAFETY: the closure runs in the forked child before exec and only makes raw system calls
    // (setgroups, setresgid, setresuid) on data prepared before the fork: it allocates nothing
    // and takes no lock.
    #[allow(unsafe_code)]
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(command, move || {
            ids.become_for_good().map_err(std::io::Error::from)
        });
    }
}

fn run_one(cmd: &Cmd, config: &Config, path: &str) -> CmdOutput {
    let Some((program, args)) = cmd.argv.split_first() else {
        return CmdOutput {
            rc: 127,
            stdout: String::new(),
            stderr: "empty command".into(),
        };
    };
    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .env("PATH", path)
        // root's home, as a task under Ansible's chroot connection sees it (a task run as
        // another user gets that user's, below).
        .env("HOME", "/root")
        .env("LANG", "C.UTF-8")
        .env("container", "imgbuild")
        .env("SYSTEMD_IN_CHROOT", "1")
        .env("KERNEL_VERSION", &config.kernel_version)
        .envs(cmd.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(cmd.cwd.as_deref().unwrap_or("/"))
        .stdin(if cmd.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(user) = &cmd.user {
        as_user(&mut command, user);
    }
    let output = command.spawn().and_then(|mut child| {
        if let (Some(input), Some(mut pipe)) = (&cmd.stdin, child.stdin.take()) {
            let input = input.clone();
            std::thread::spawn(move || {
                let _ = pipe.write_all(input.as_bytes());
            });
        }
        // Both pipes are read as they fill: the newest line goes to the host while the
        // command runs (a heartbeat shows it), and a full pipe never blocks the command.
        let throttle = Throttle::new(std::time::Duration::from_secs(1));
        let readers = (
            child.stdout.take().map(|p| drain(p, throttle.clone())),
            child.stderr.take().map(|p| drain(p, throttle)),
        );
        let status = child.wait()?;
        let collect = |reader: Option<std::thread::JoinHandle<Vec<u8>>>| {
            reader.and_then(|r| r.join().ok()).unwrap_or_default()
        };
        Ok((status, collect(readers.0), collect(readers.1)))
    });
    let result = match output {
        Ok((status, stdout, stderr)) => {
            let rc = status.code().unwrap_or_else(|| {
                128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
            });
            CmdOutput {
                rc,
                stdout: String::from_utf8_lossy(&stdout).into_owned(),
                stderr: String::from_utf8_lossy(&stderr).into_owned(),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => CmdOutput {
            rc: 127,
            stdout: String::new(),
            stderr: not_found(program),
        },
        Err(e) => CmdOutput {
            rc: 126,
            stdout: String::new(),
            stderr: format!("{program}: {e}"),
        },
    };
    // PID 1 adopts orphans: reap them.
    while let Ok(Some(_)) = rustix::process::waitpid(None, rustix::process::WaitOptions::NOHANG) {}
    result
}

/// Entry point of `imgbuild __sandbox-init`: mounts, chroot, then one command per request line.
pub fn init_main() -> i32 {
    let config = match die_with_parent()
        .and_then(|()| {
            std::env::var(CONFIG_ENV).map_err(|_| "no sandbox configuration".to_string())
        })
        .and_then(|text| serde_json::from_str::<Config>(&text).map_err(|e| e.to_string()))
    {
        Ok(config) => config,
        Err(message) => {
            hello(&Hello::Fatal(message));
            return 1;
        }
    };
    if let Err(message) = mount_overlay(&config) {
        hello(&Hello::NoOverlay(message));
        return 1;
    }
    let path = match enter(&config).and_then(|path| drop_host_capabilities().map(|()| path)) {
        Ok(path) => path,
        Err(message) => {
            hello(&Hello::Fatal(message));
            return 1;
        }
    };
    hello(&Hello::Ready);
    let stdin = std::io::stdin();
    // Not held across commands: a command's progress lines are written from reader threads.
    let stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let answer = match serde_json::from_str::<Cmd>(&line) {
            Ok(cmd) => run_one(&cmd, &config, &path),
            Err(e) => CmdOutput {
                rc: 126,
                stdout: String::new(),
                stderr: format!("bad request: {e}"),
            },
        };
        let mut out = stdout.lock();
        if writeln!(
            out,
            "{}",
            serde_json::to_string(&answer).unwrap_or_default()
        )
        .and_then(|_| out.flush())
        .is_err()
        {
            break;
        }
    }
    0
}

#[cfg(test)]
#[path = "sandbox_tests.rs"]
mod tests;
