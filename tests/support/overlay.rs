//! An overlayfs view of a shared rootfs, mounted in a mount namespace of its own for one
//! command (so nothing stays mounted when the command ends, however it ends): the differential
//! harness runs each side of a case on one, the conformance suite each target.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The folders of one overlay view: an overlay upper and work folder, and the merged root.
pub struct Side {
    /// What the run wrote (the overlay's upper folder).
    pub upper: PathBuf,
    work: PathBuf,
    /// The merged root a command sees.
    pub merged: PathBuf,
}

impl Side {
    /// Makes the side's folders below `dir`.
    pub fn new(dir: &Path) -> Self {
        let side = Self {
            upper: dir.join("upper"),
            work: dir.join("work"),
            merged: dir.join("merged"),
        };
        for d in [&side.upper, &side.work, &side.merged] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        }
        side
    }

    /// A shell prefix that mounts the overlay (and, with `host_mounts`, what a container runtime
    /// would give a play: proc, sys, dev, and fresh tmpfs on /tmp and /run), then execs `argv`.
    fn script(&self, lower: &Path, host_mounts: bool) -> String {
        let m = self.merged.display();
        let mut script = format!(
            "set -e; mount -t overlay overlay -o lowerdir={},upperdir={},workdir={} {m}; ",
            lower.display(),
            self.upper.display(),
            self.work.display()
        );
        if host_mounts {
            script.push_str(&format!(
                "mount -t proc proc {m}/proc; mount -t sysfs sysfs {m}/sys; \
                 mount --rbind /dev {m}/dev; mount -t tmpfs tmpfs {m}/tmp; \
                 mount -t tmpfs tmpfs {m}/run; "
            ));
        }
        script.push_str("exec \"$@\"");
        script
    }

    /// Runs `command` with the overlay mounted (and, with `host_mounts`, what a container
    /// runtime gives a play), in a mount namespace of its own.
    pub fn run(&self, lower: &Path, host_mounts: bool, command: Command) -> Output {
        let mut wrapped = Command::new("unshare");
        wrapped
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg(self.script(lower, host_mounts))
            .arg("sh")
            .arg(command.get_program())
            .args(command.get_args());
        for (k, v) in command.get_envs() {
            match v {
                Some(v) => wrapped.env(k, v),
                None => wrapped.env_remove(k),
            };
        }
        if let Some(dir) = command.get_current_dir() {
            wrapped.current_dir(dir);
        }
        wrapped
            .output()
            .unwrap_or_else(|e| panic!("unshare (util-linux): {e}"))
    }
}
