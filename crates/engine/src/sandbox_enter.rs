//! `imgbuild __sandbox-enter /proc/<pid>/root <program> <args>...`: the `chroot` that
//! ansible-playbook's `community.general.chroot` connection runs (its `chroot_exe`) when a task
//! runs through Ansible's own code. The command joins the running build sandbox whose init is
//! `<pid>`: its mount and PID namespaces and its root, with the sandbox's environment and the
//! capabilities the sandbox drops dropped. It dies with the build: the kernel kills it when
//! the sandbox's init ends, and it asks for SIGKILL when ansible-playbook's process dies.

use std::fs::File;
use std::os::fd::AsFd;
use std::process::Command;

/// The hidden first argument under which imgbuild enters a sandbox.
pub const ENTER_ARG: &str = modules::ansible_action::SANDBOX_ENTER_ARG;

/// The init process named by a chroot folder of the form `/proc/<pid>/root`.
pub fn init_of(chroot: &str) -> Option<u32> {
    chroot
        .strip_prefix("/proc/")?
        .strip_suffix("/root")?
        .parse()
        .ok()
}

/// Entry point of `imgbuild __sandbox-enter`: runs the command in the sandbox and returns its
/// exit code (126 when the sandbox cannot be entered).
pub fn enter_main() -> i32 {
    let args: Vec<String> = std::env::args().skip(2).collect();
    let (Some(init), Some((program, rest))) = (
        args.first().and_then(|dir| init_of(dir)),
        args.get(1..).and_then(<[String]>::split_first),
    ) else {
        eprintln!("imgbuild: {ENTER_ARG} needs /proc/<pid>/root, a program and its arguments");
        return 2;
    };
    let env = match enter(init) {
        Ok(env) => env,
        Err(message) => {
            eprintln!("imgbuild: entering the build sandbox of process {init}: {message}");
            return 126;
        }
    };
    // The sandbox's environment, never the building machine's (which may hold credentials):
    // Ansible puts what a module needs on its command line.
    let status = Command::new(program)
        .args(rest)
        .env_clear()
        .env("HOME", "/root")
        .env("LANG", "C.UTF-8")
        .env("container", "imgbuild")
        .env("SYSTEMD_IN_CHROOT", "1")
        .envs(env)
        .current_dir("/")
        .status();
    match status {
        Ok(status) => status.code().unwrap_or_else(|| {
            128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
        }),
        Err(e) => {
            eprintln!("imgbuild: {program}: {e}");
            if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            }
        }
    }
}

/// Joins the namespaces and the root of the sandbox whose init is `init`; returns the
/// environment its commands run with.
fn enter(init: u32) -> Result<Vec<(String, String)>, String> {
    let open = |what: &str| {
        File::open(format!("/proc/{init}/{what}")).map_err(|e| format!("/proc/{init}/{what}: {e}"))
    };
    // Opened first: once in the sandbox's mount namespace, this process's root is that
    // namespace's, not the folder init chrooted into.
    let root = open("root")?;
    let mounts = open("ns/mnt")?;
    let pids = open("ns/pid")?;
    use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};
    move_into_link_name_space(mounts.as_fd(), Some(LinkNameSpaceType::Mount))
        .map_err(|e| format!("joining its mount namespace (imgbuild must run as root): {e}"))?;
    // Children of this process are born in the sandbox's PID namespace.
    move_into_link_name_space(pids.as_fd(), Some(LinkNameSpaceType::ProcessID))
        .map_err(|e| format!("joining its PID namespace: {e}"))?;
    rustix::process::fchdir(&root).map_err(|e| format!("fchdir: {e}"))?;
    rustix::process::chroot(".").map_err(|e| format!("chroot: {e}"))?;
    rustix::process::chdir("/").map_err(|e| format!("chdir /: {e}"))?;
    crate::sandbox::drop_host_capabilities()?;
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|e| format!("prctl: {e}"))?;
    let file = format!("/run/{}", crate::sandbox::ENV_FILE);
    let text = std::fs::read_to_string(&file).map_err(|e| format!("the sandbox's {file}: {e}"))?;
    Ok(text
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_init_is_read_from_its_root_folder_only() {
        assert_eq!(init_of("/proc/4242/root"), Some(4242));
        assert_eq!(init_of("/proc/self/root"), None);
        assert_eq!(init_of("/srv/image"), None);
        assert_eq!(init_of("/proc/12/root/etc"), None);
    }
}
