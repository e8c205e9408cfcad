//! The machine's cores split between the images of one `build --jobs N` whose roles run at the
//! same time. Each role's sandbox is pinned to its share (CPU affinity, which `nproc`, and so
//! DKMS's `make -j`, reads): two DKMS builds side by side then run a compile job per core
//! between them, not one per core each, which costs about 8% more CPU on a 2-core machine (the
//! compilers evict each other's caches). A role running alone gets every core; when another
//! role starts or ends, the sandboxes still running are pinned again, down to their threads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rustix::process::Pid;
use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

/// The cores, and the roles running on them.
#[derive(Debug)]
pub struct CpuShares {
    cores: Vec<usize>,
    running: Mutex<Vec<Running>>,
    next: AtomicU64,
}

/// A role running, and the processes of its sandbox once started.
#[derive(Debug)]
struct Running {
    id: u64,
    pids: Vec<i32>,
}

/// A role's share of the cores, from its start to its end (dropped).
pub struct Share<'a> {
    shares: &'a CpuShares,
    id: u64,
}

impl CpuShares {
    /// The cores this process may run on, to be split.
    pub fn new() -> CpuShares {
        let cores = match sched_getaffinity(None) {
            Ok(allowed) => (0..CpuSet::MAX_CPU)
                .filter(|cpu| allowed.is_set(*cpu))
                .collect(),
            Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
        };
        CpuShares::of(cores)
    }

    fn of(cores: Vec<usize>) -> CpuShares {
        CpuShares {
            cores,
            running: Mutex::new(Vec::new()),
            next: AtomicU64::new(0),
        }
    }

    /// A role starts: the cores are split again among the running roles.
    pub fn enter(&self) -> Share<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.push(Running {
            id,
            pids: Vec::new(),
        });
        self.pin_all(&running);
        Share { shares: self, id }
    }

    /// The cores of the `index`th of `of` running roles: an even slice, at least one core.
    fn slice(&self, index: usize, of: usize) -> Vec<usize> {
        let n = self.cores.len();
        if n == 0 {
            return Vec::new();
        }
        let (from, to) = (index * n / of, (index + 1) * n / of);
        match from < to {
            true => self.cores[from..to].to_vec(),
            false => vec![self.cores[index % n]],
        }
    }

    fn pin_all(&self, running: &[Running]) {
        for (index, role) in running.iter().enumerate() {
            let set = cpu_set(&self.slice(index, running.len()));
            for pid in &role.pids {
                pin_tree(*pid, &set);
            }
        }
    }
}

impl Default for CpuShares {
    fn default() -> Self {
        CpuShares::new()
    }
}

impl Share<'_> {
    /// Runs `start` (which starts the role's sandbox) on this thread pinned to the share, so
    /// the sandbox inherits it, then records the processes the thread started, to pin them
    /// again when the split changes.
    pub fn start<T>(&self, start: impl FnOnce() -> T) -> T {
        let mut running = self
            .shares
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let index = running.iter().position(|r| r.id == self.id).unwrap_or(0);
        let set = cpu_set(&self.shares.slice(index, running.len().max(1)));
        let before = sched_getaffinity(None).ok();
        let _ = sched_setaffinity(None, &set);
        let started = start();
        if let Some(before) = before {
            let _ = sched_setaffinity(None, &before);
        }
        if let Some(me) = running.iter_mut().find(|r| r.id == self.id) {
            me.pids = children("/proc/thread-self/children");
        }
        started
    }
}

impl Drop for Share<'_> {
    fn drop(&mut self) {
        let mut running = self
            .shares
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        running.retain(|r| r.id != self.id);
        self.shares.pin_all(&running);
    }
}

fn cpu_set(cores: &[usize]) -> CpuSet {
    let mut set = CpuSet::new();
    for core in cores {
        set.set(*core);
    }
    set
}

/// The process ids a `children` file of /proc lists.
fn children(path: &str) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|pid| pid.parse().ok())
        .collect()
}

/// Pins every thread of `pid` and of the processes below it (those that end meanwhile are
/// skipped; one forked meanwhile inherits its parent's pinning).
fn pin_tree(pid: i32, set: &CpuSet) {
    let mut todo = vec![pid];
    while let Some(pid) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let name = task.file_name();
            let Some(tid) = name.to_str().and_then(|t| t.parse::<i32>().ok()) else {
                continue;
            };
            if let Some(thread) = Pid::from_raw(tid) {
                let _ = sched_setaffinity(Some(thread), set);
            }
            todo.extend(children(&format!("/proc/{pid}/task/{tid}/children")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cores_are_split_evenly_between_running_roles() {
        let shares = CpuShares::of(vec![0, 1, 2, 3]);
        assert_eq!(shares.slice(0, 1), vec![0, 1, 2, 3]);
        assert_eq!(shares.slice(0, 2), vec![0, 1]);
        assert_eq!(shares.slice(1, 2), vec![2, 3]);
        let three: Vec<Vec<usize>> = (0..3).map(|i| shares.slice(i, 3)).collect();
        assert_eq!(three, vec![vec![0], vec![1], vec![2, 3]]);
        let two = CpuShares::of(vec![0, 1]);
        assert_eq!(
            (0..3).map(|i| two.slice(i, 3)).collect::<Vec<_>>(),
            vec![vec![0], vec![0], vec![1]],
            "more roles than cores: each still gets one"
        );
    }

    #[test]
    fn a_sandbox_is_pinned_to_its_share_and_widened_when_the_other_role_ends() {
        let mine = CpuShares::new();
        if mine.cores.len() < 2 {
            return; // one core: nothing to split
        }
        let first = mine.enter();
        let second = mine.enter();
        let mut child = second.start(|| {
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .expect("sleep")
        });
        let pid = Pid::from_raw(child.id() as i32).expect("pid");
        let pinned = sched_getaffinity(Some(pid)).expect("affinity");
        let all = mine.cores.len() as u32;
        assert_eq!(
            pinned.count(),
            all - all / 2,
            "the second half of the cores"
        );
        assert_eq!(
            sched_getaffinity(None).expect("mine").count(),
            all,
            "the thread itself is not left pinned"
        );
        drop(first);
        let widened = sched_getaffinity(Some(pid)).expect("affinity");
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(widened.count(), all, "alone again: every core");
    }
}
