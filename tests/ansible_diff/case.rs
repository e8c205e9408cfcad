//! One case of a differential harness run on both sides and judged (the trees compared, the
//! differences that are expected on purpose or still open set aside), and all cases run two
//! at a time: shared by the Debian harness (`tests/ansible_diff.rs`) and the EL one
//! (`tests/el_diff.rs`).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Mutex;
use std::time::Instant;

use super::oracle::Oracle;
use super::{runs, tree};

/// What a harness expects besides equal trees.
pub struct Expect<'a> {
    /// The harness's name, in what it prints.
    pub label: &'a str,
    /// Paths that differ on every run whoever runs the role (with all below them).
    pub ignored: &'a [&'a str],
    /// Where imgbuild differs from Ansible on purpose: (case, path, why).
    pub deliberate: &'a [(&'a str, &'a str, &'a str)],
    /// Cases still differing, with what differs: the open work.
    pub open: &'a [(&'a str, &'a str)],
    /// Ansible's runs kept from earlier test runs, if any.
    pub oracle: Option<&'a Oracle>,
    /// The mirror the recipes name (part of a kept run's key).
    pub mirror: &'a str,
}

/// The cases: one folder each below `roles/` (but `_name`), sorted; the environment variable
/// `only` (`case,case`) picks some.
pub fn names(fixtures: &Path, only: &str) -> Vec<String> {
    let only: Option<Vec<String>> = std::env::var(only)
        .ok()
        .map(|s| s.split(',').map(str::to_owned).collect());
    let mut names: Vec<String> = std::fs::read_dir(fixtures.join("roles"))
        .expect("roles")
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        // `_name`: roles that cases depend on (meta/main.yml), not cases themselves.
        .filter(|n| !n.starts_with('_'))
        .filter(|n| only.as_ref().is_none_or(|o| o.contains(n)))
        .collect();
    names.sort();
    names
}

/// The last lines a run printed.
pub fn show(out: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n        ")
}

impl Expect<'_> {
    fn ignored(&self, path: &str) -> bool {
        self.ignored
            .iter()
            .any(|p| path == *p || path.starts_with(&format!("{p}/")))
    }

    /// Runs one case on both sides; the problems found, as text (empty: the trees match).
    pub fn run_case(
        &self,
        name: &str,
        project: &Path,
        fixtures: &Path,
        lower: &Path,
        work: &Path,
    ) -> Vec<String> {
        let scratch = work.join(name);
        let extra = fixtures.join(format!("extra-vars/{name}.yml"));
        let case = runs::Case {
            name,
            project,
            extra_vars: extra.is_file().then_some(extra.as_path()),
            lower,
            scratch: &scratch,
        };
        let b_side = runs::Side::new(&scratch.join("imgbuild"));
        let (a_out, b_out, a_upper) = self.run_both(&case, &b_side);
        let log = |file: &str, out: &Output| {
            let text = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
            std::fs::write(scratch.join(file), text).expect("log");
        };
        log("ansible.log", &a_out);
        log("imgbuild.log", &b_out);
        let mut problems = Vec::new();
        if !a_out.status.success() {
            // A case is valid Ansible that runs to its end: a failure on purpose is ignored or
            // rescued inside the role, so the tree records it.
            problems.push(format!(
                "ansible-playbook failed ({}): the case must run to its end\n        {}",
                a_out.status,
                show(&a_out)
            ));
        } else if !b_out.status.success() {
            problems.push(format!(
                "imgbuild failed ({}) where ansible-playbook succeeded:\n        {}",
                b_out.status,
                show(&b_out)
            ));
        }
        let a_tree = tree::Layered {
            upper: &a_upper,
            lower,
        };
        let b_tree = tree::Layered {
            upper: &b_side.upper,
            lower,
        };
        let differences = tree::compare(&a_tree, &b_tree, |p| self.ignored(p));
        let open = self.open.iter().find(|o| o.0 == name);
        if let Some((_, what)) = open.filter(|_| a_out.status.success()) {
            if problems.is_empty() && differences.is_empty() {
                return vec![format!(
                    "listed in OPEN ({what}) but now leaves the same tree: take it off the list"
                )];
            }
            eprintln!(
                "{} {name}: open ({what}):\n    {}",
                self.label,
                problems
                    .iter()
                    .map(ToString::to_string)
                    .chain(differences.iter().map(ToString::to_string))
                    .collect::<Vec<_>>()
                    .join("\n    ")
            );
            return Vec::new();
        }
        if !problems.is_empty() {
            // A run that stopped early differs everywhere after it: the first failure says why.
            problems.push(format!("({} paths differ)", differences.len()));
            return problems;
        }
        self.judge(name, differences, &scratch)
    }

    /// Runs the case with `ansible-playbook` (or takes its kept run) and, beside it, with
    /// imgbuild on `b_side`: their outputs, and the folder of what Ansible wrote.
    fn run_both(&self, case: &runs::Case, b_side: &runs::Side) -> (Output, Output, PathBuf) {
        if let Some(kept) = self.oracle.and_then(|o| o.kept(case.name, self.mirror)) {
            return (kept.output, runs::imgbuild(case, b_side), kept.upper);
        }
        let a_side = runs::Side::new(&case.scratch.join("ansible"));
        let (a_out, b_out) = std::thread::scope(|s| {
            let a = s.spawn(|| runs::ansible(case, &a_side));
            let b = runs::imgbuild(case, b_side);
            (a.join().expect("ansible run"), b)
        });
        if let Some(oracle) = self.oracle {
            oracle.keep(case.name, self.mirror, &a_side.upper, &a_out);
        }
        (a_out, b_out, a_side.upper)
    }

    /// The differences not expected on purpose, and the expectations that did not show.
    fn judge(&self, name: &str, differences: Vec<tree::Difference>, scratch: &Path) -> Vec<String> {
        // A deliberate difference names a path and covers everything below it.
        let expected: Vec<&(&str, &str, &str)> =
            self.deliberate.iter().filter(|d| d.0 == name).collect();
        let mut seen = vec![false; expected.len()];
        let mut problems = Vec::new();
        for difference in differences {
            let under = |d: &&(&str, &str, &str)| {
                difference.path == d.1 || difference.path.starts_with(&format!("{}/", d.1))
            };
            match expected.iter().position(under) {
                Some(i) => seen[i] = true,
                None => problems.push(difference.to_string()),
            }
        }
        for ((_, path, why), seen) in expected.iter().zip(seen) {
            if !seen {
                problems.push(format!(
                    "{path}: expected to differ on purpose ({why}), but both runs left the same"
                ));
            }
        }
        if problems.is_empty() {
            let _ = std::fs::remove_dir_all(scratch);
        }
        problems
    }

    /// Runs every case, two at a time, and prints a line per case and a summary; the cases
    /// that failed, with their problems, as text (empty: all as expected).
    pub fn run_all(
        &self,
        names: &[String],
        project: &Path,
        fixtures: &Path,
        lower: &Path,
        work: &Path,
    ) -> Vec<String> {
        let started = Instant::now();
        let queue = Mutex::new(names.iter());
        let results: Mutex<Vec<(String, Vec<String>)>> = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some(name) = next else { break };
                    let t = Instant::now();
                    let problems = self.run_case(name, project, fixtures, lower, work);
                    let listed = self.open.iter().any(|o| o.0 == *name);
                    let verdict = match (problems.is_empty(), listed) {
                        (false, _) => "DIFFERS",
                        (true, true) => "differs, listed in OPEN",
                        (true, false) => "same tree",
                    };
                    let secs = t.elapsed().as_secs_f64();
                    eprintln!("{} {name}: {verdict} ({secs:.1} s)", self.label);
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((name.clone(), problems));
                });
            }
        });
        let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
        results.sort_by(|a, b| a.0.cmp(&b.0));
        let failing: Vec<String> = results
            .iter()
            .filter(|r| !r.1.is_empty())
            .map(|(name, problems)| format!("  {name}:\n    {}", problems.join("\n    ")))
            .collect();
        let open = results
            .iter()
            .filter(|r| r.1.is_empty() && self.open.iter().any(|o| o.0 == r.0))
            .count();
        eprintln!(
            "{}: {} of {} cases leave the same tree ({} open, {} failing), {:.0} s",
            self.label,
            results.len() - failing.len() - open,
            results.len(),
            open,
            failing.len(),
            started.elapsed().as_secs_f64()
        );
        failing
    }
}
