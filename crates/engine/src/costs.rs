//! Where a role's time goes: each task's seconds, and for a task that ran dpkg (an `apt`
//! task, `apt-get` in a shell, an installer calling dpkg) its phases, read from the lines the
//! task added to the image's own `/var/log/dpkg.log`: download (until dpkg's first line),
//! unpacking, configuring (with the slowest packages: a DKMS compile runs in its package's
//! configure step) and triggers.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::target::Target;

/// dpkg's log in an image.
const DPKG_LOG: &str = "/var/log/dpkg.log";
/// How many of the slowest packages to configure a task's phases keep.
const SLOWEST: usize = 3;

/// What one task cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskCost {
    /// The task's name.
    pub task: String,
    /// `path:line`.
    pub source: String,
    /// Seconds it took.
    pub seconds: f64,
    /// Its dpkg phases, when it ran dpkg.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packages: Option<PackagePhases>,
}

/// The phases of the dpkg runs of one task, in seconds (dpkg logs whole seconds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PackagePhases {
    /// From the task's start to dpkg's first line: apt updating its lists, resolving and
    /// downloading.
    pub download: f64,
    /// Unpacking packages.
    pub unpack: f64,
    /// Configuring packages (their maintainer scripts: a DKMS compile is here).
    pub configure: f64,
    /// Running triggers (ldconfig, man-db, initramfs-tools, ...).
    pub triggers: f64,
    /// Removing packages.
    pub remove: f64,
    /// The packages that took longest to configure, with their seconds.
    pub slowest: Vec<(String, f64)>,
}

/// Where dpkg's log ended before a task, to read what the task added.
#[derive(Debug, Clone, Copy)]
pub struct DpkgLogMark(u64);

impl DpkgLogMark {
    /// The log's length now (0 when the image has none yet).
    pub fn take(target: &dyn Target) -> Self {
        let length = target
            .fs()
            .open_read(Path::new(DPKG_LOG))
            .ok()
            .and_then(|f| f.metadata().ok())
            .map_or(0, |m| m.len());
        Self(length)
    }

    /// The phases of what dpkg logged since the mark, for a task that took `seconds`.
    pub fn phases(self, target: &dyn Target, seconds: f64) -> Option<PackagePhases> {
        let mut file = target.fs().open_read(Path::new(DPKG_LOG)).ok()?;
        let mut added = String::new();
        file.seek(SeekFrom::Start(self.0)).ok()?;
        // A log that shrank (rotated, removed) has nothing to tell.
        file.take(16 << 20).read_to_string(&mut added).ok()?;
        PackagePhases::from_log(&added, seconds)
    }
}

/// The dpkg.log actions that begin a phase.
const ACTIONS: [&str; 6] = [
    "install",
    "upgrade",
    "configure",
    "trigproc",
    "remove",
    "purge",
];

/// One dpkg.log line: its second of the day and its action.
struct LogLine<'a> {
    at: i64,
    words: Vec<&'a str>,
}

fn parse_line(line: &str) -> Option<LogLine<'_>> {
    let mut words = line.split_whitespace();
    let date = words.next()?;
    let time = words.next()?;
    let day: i64 = date.split('-').nth(2)?.parse().ok()?;
    let mut hms = time.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    Some(LogLine {
        at: ((day * 24 + h) * 60 + m) * 60 + s,
        words: words.collect(),
    })
}

impl PackagePhases {
    /// The phases of `log` (dpkg.log lines, oldest first) for a task of `seconds`; `None` when
    /// the lines say nothing dpkg did.
    pub fn from_log(log: &str, seconds: f64) -> Option<PackagePhases> {
        let lines: Vec<LogLine> = log.lines().filter_map(parse_line).collect();
        let first = lines.first()?.at;
        let last = lines.last()?.at;
        let mut phases = PackagePhases {
            download: (seconds - (last - first) as f64).max(0.0),
            ..PackagePhases::default()
        };
        let mut configuring: Vec<(String, f64)> = Vec::new();
        // Each interval between two lines is charged to the action the last action line began
        // (status lines go on with it: a trigger's `half-configured` is the trigger's).
        let mut current: Option<(&str, &str)> = None;
        for pair in lines.windows(2) {
            if let [action, package, ..] = pair[0].words[..] {
                if ACTIONS.contains(&action) {
                    current = Some((action, package.split(':').next().unwrap_or(package)));
                }
            }
            let span = (pair[1].at - pair[0].at).max(0) as f64;
            match current {
                Some(("install" | "upgrade", _)) => phases.unpack += span,
                Some(("configure", package)) => {
                    phases.configure += span;
                    match configuring.iter_mut().find(|(p, _)| p == package) {
                        Some((_, total)) => *total += span,
                        None => configuring.push((package.to_owned(), span)),
                    }
                }
                Some(("trigproc", _)) => phases.triggers += span,
                Some(("remove" | "purge", _)) => phases.remove += span,
                _ => {}
            }
        }
        configuring.sort_by(|a, b| b.1.total_cmp(&a.1));
        configuring.retain(|(_, s)| *s >= 1.0);
        configuring.truncate(SLOWEST);
        phases.slowest = configuring;
        Some(phases)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
2026-11-24 06:00:10 startup archives unpack
2026-11-24 06:00:10 install dkms:all <none> 3.0.10-8
2026-11-24 06:00:10 status half-installed dkms:all 3.0.10-8
2026-11-24 06:00:12 status unpacked dkms:all 3.0.10-8
2026-11-24 06:00:12 install nvidia-kernel-dkms:amd64 <none> 535.261.03-1
2026-11-24 06:00:12 status half-installed nvidia-kernel-dkms:amd64 535.261.03-1
2026-11-24 06:00:20 status unpacked nvidia-kernel-dkms:amd64 535.261.03-1
2026-11-24 06:00:20 startup packages configure
2026-11-24 06:00:20 configure dkms:all 3.0.10-8 <none>
2026-11-24 06:00:20 status half-configured dkms:all 3.0.10-8
2026-11-24 06:00:21 status installed dkms:all 3.0.10-8
2026-11-24 06:00:21 configure nvidia-kernel-dkms:amd64 535.261.03-1 <none>
2026-11-24 06:00:21 status half-configured nvidia-kernel-dkms:amd64 535.261.03-1
2026-11-24 06:03:01 status installed nvidia-kernel-dkms:amd64 535.261.03-1
2026-11-24 06:03:01 trigproc libc-bin:amd64 2.36-9 <none>
2026-11-24 06:03:01 status half-configured libc-bin:amd64 2.36-9
2026-11-24 06:03:03 status installed libc-bin:amd64 2.36-9
";

    #[test]
    fn a_dkms_compile_is_its_package_s_configure_step() {
        let phases = PackagePhases::from_log(LOG, 200.0).expect("phases");
        // 173 s between dpkg's first and last line; the rest of the task is apt's download.
        assert_eq!(phases.download, 27.0);
        assert_eq!(phases.unpack, 10.0);
        assert_eq!(phases.configure, 161.0);
        // libc-bin's `half-configured` is its trigger's, not a configure step.
        assert_eq!(phases.triggers, 2.0);
        assert_eq!(
            phases.slowest,
            [
                ("nvidia-kernel-dkms".to_owned(), 160.0),
                ("dkms".to_owned(), 1.0)
            ]
        );
        let total = phases.download + phases.unpack + phases.configure + phases.triggers;
        assert_eq!(total, 200.0);
    }

    #[test]
    fn nothing_logged_is_no_phases() {
        assert_eq!(PackagePhases::from_log("", 3.0), None);
        assert_eq!(PackagePhases::from_log("not a dpkg line\n", 3.0), None);
    }
}
