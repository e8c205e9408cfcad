//! Entering the user namespace: the parent re-runs imgbuild with the same arguments, the child
//! unshares a user namespace as its first step, the parent maps the child's ids with
//! `newuidmap`/`newgidmap`, and the child goes on as root of the namespace once both maps are
//! written. The parent passes SIGTERM and SIGHUP on and exits with the child's code.

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::error::RootlessError;
use crate::mapping::{find_tool, Mapping};
use crate::subids::IdRange;

/// Set in the child's environment: it unshares and waits for its maps.
const CHILD_ENV: &str = "IMGBUILD_USERNS_CHILD";
/// How long either side waits for the other.
const PATIENCE: Duration = Duration::from_secs(30);

/// Runs this command again, as root of a user namespace with `mapping`; returns its exit code.
pub fn run_inside(mapping: &Mapping) -> Result<i32, RootlessError> {
    let fail =
        |what: &str, e: &dyn std::fmt::Display| RootlessError::Namespace(format!("{what}: {e}"));
    let exe = std::env::current_exe().map_err(|e| fail("finding imgbuild", &e))?;
    let mut child = Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(CHILD_ENV, "1")
        .spawn()
        .map_err(|e| fail("starting imgbuild", &e))?;
    let pid = child.id();
    forward_signals(pid).map_err(|e| fail("handling signals", &e))?;
    let mapped = wait_for_unshare(&mut child).and_then(|exited| match exited {
        Some(code) => Ok(Some(code)),
        None => {
            map_ids("newuidmap", pid, mapping.uid, &mapping.uids)?;
            map_ids("newgidmap", pid, mapping.gid, &mapping.gids)?;
            Ok(None)
        }
    });
    match mapped {
        Ok(Some(code)) => return Ok(code),
        Ok(None) => {}
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    }
    let status = child.wait().map_err(|e| fail("waiting for imgbuild", &e))?;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(1)))
}

/// Passes SIGTERM and SIGHUP on to the child; Ctrl-C's SIGINT reaches it from the terminal.
fn forward_signals(pid: u32) -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT])?;
    let child = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX));
    std::thread::spawn(move || {
        for signal in signals.forever() {
            let forwarded = match signal {
                SIGTERM => rustix::process::Signal::TERM,
                SIGHUP => rustix::process::Signal::HUP,
                _ => continue,
            };
            if let Some(child) = child {
                let _ = rustix::process::kill_process(child, forwarded);
            }
        }
    });
    Ok(())
}

/// Waits until the child is in a user namespace of its own; `Some(code)` if it exited first.
fn wait_for_unshare(child: &mut Child) -> Result<Option<i32>, RootlessError> {
    let ours = std::fs::read_link("/proc/self/ns/user").ok();
    let theirs = format!("/proc/{}/ns/user", child.id());
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Ok(Some(status.code().unwrap_or(1)));
        }
        if std::fs::read_link(&theirs)
            .ok()
            .is_some_and(|ns| Some(&ns) != ours.as_ref())
        {
            return Ok(None);
        }
        if started.elapsed() > PATIENCE {
            return Err(RootlessError::Namespace(
                "imgbuild did not make its user namespace in 30 s".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The arguments of `newuidmap`/`newgidmap`: the user as 0, the ranges as 1 and up.
fn map_args(pid: u32, own: u32, ranges: &[IdRange]) -> Vec<String> {
    let mut args = vec![pid.to_string(), "0".into(), own.to_string(), "1".into()];
    let mut inside: u64 = 1;
    for range in ranges {
        args.extend([
            inside.to_string(),
            range.first.to_string(),
            range.count.to_string(),
        ]);
        inside += u64::from(range.count);
    }
    args
}

fn map_ids(
    tool: &'static str,
    pid: u32,
    own: u32,
    ranges: &[IdRange],
) -> Result<(), RootlessError> {
    let path = find_tool(tool).ok_or(RootlessError::MissingTool { tool })?;
    let out = Command::new(&path)
        .args(map_args(pid, own, ranges))
        .output()
        .map_err(|e| RootlessError::Namespace(format!("running {tool}: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    Err(RootlessError::Namespace(format!(
        "{tool} failed ({}): {}; it must be setuid root (ls -l {})",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim(),
        path.display()
    )))
}

/// The child's first step, before any thread starts: when the parent started it to run in a
/// user namespace, unshares one and waits for the parent to map its ids. Does nothing in any
/// other process.
pub fn enter_if_child() -> Result<(), RootlessError> {
    if std::env::var_os(CHILD_ENV).is_none() {
        return Ok(());
    }
    let fail = |what: &str, e: rustix::io::Errno| RootlessError::Namespace(format!("{what}: {e}"));
    // SAFETY: unshare is only unsafe with CLONE_FILES (fd tables shared between threads); this
    // runs first in main, single-threaded, and unshares only the user namespace.
    #[allow(unsafe_code)]
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWUSER) }
        .map_err(|e| fail("unshare of a user namespace", e))?;
    // Dies with the parent, as a build does with imgbuild (its interrupt handler cleans up).
    // Set after unshare, whose new credentials clear it.
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))
        .map_err(|e| fail("prctl", e))?;
    let started = Instant::now();
    let mapped = |file: &str| std::fs::read_to_string(file).is_ok_and(|m| !m.trim().is_empty());
    while !(mapped("/proc/self/uid_map") && mapped("/proc/self/gid_map")) {
        if started.elapsed() > PATIENCE {
            return Err(RootlessError::Namespace(
                "the ids were not mapped in 30 s".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // The build's own children (its sandboxes) are no such child.
    std::env::remove_var(CHILD_ENV);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_is_root_and_the_ranges_follow() {
        let ranges = [
            IdRange {
                first: 100000,
                count: 65536,
            },
            IdRange {
                first: 300000,
                count: 10,
            },
        ];
        assert_eq!(
            map_args(42, 1000, &ranges),
            ["42", "0", "1000", "1", "1", "100000", "65536", "65537", "300000", "10"]
        );
    }
}
