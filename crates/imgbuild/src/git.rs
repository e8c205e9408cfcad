//! The few git questions the matrix workflow asks: which files changed since a revision, a
//! file's text at a revision, and the project's tree at a revision.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use anyhow::{anyhow, Context};

use crate::Failure;

fn git(root: &Path, args: &[&str]) -> Result<Output, Failure> {
    Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .context("cannot run git; install it or run outside of --since/--diff")
        .map_err(Failure::Run)
}

fn stdout_of(root: &Path, args: &[&str]) -> Result<String, Failure> {
    let out = git(root, args)?;
    if !out.status.success() {
        return Err(Failure::Run(anyhow!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Checks that `rev` names a commit (or a tree, such as the empty tree) of the repository
/// holding `root` (bad input otherwise).
pub fn check_revision(root: &Path, rev: &str) -> Result<(), Failure> {
    let out = git(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{tree}}"),
        ],
    )?;
    if out.status.success() {
        return Ok(());
    }
    let inside = git(root, &["rev-parse", "--is-inside-work-tree"])?;
    if !inside.status.success() {
        return Err(Failure::Input(anyhow!(
            "{} is not inside a git repository; --since and --diff compare against a git revision",
            root.display()
        )));
    }
    Err(Failure::Input(anyhow!(
        "'{rev}' is not a commit or tree of this repository (in a shallow CI clone, fetch it first: git fetch origin main)"
    )))
}

/// Files below `root` (paths relative to it) that differ between `rev` and the working tree:
/// modified, added, deleted (both names of a rename) and untracked but not ignored.
pub fn changed_files(root: &Path, rev: &str) -> Result<BTreeSet<String>, Failure> {
    check_revision(root, rev)?;
    let diff = stdout_of(
        root,
        &[
            "diff",
            "--name-only",
            "--no-renames",
            "--relative",
            rev,
            "--",
        ],
    )?;
    let untracked = stdout_of(root, &["ls-files", "--others", "--exclude-standard"])?;
    Ok(diff
        .lines()
        .chain(untracked.lines())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

/// The text of `rel` (relative to `root`) at `rev`, or `None` where it did not exist.
pub fn file_at(root: &Path, rev: &str, rel: &str) -> Result<Option<String>, Failure> {
    let out = git(root, &["show", &format!("{rev}:./{rel}")])?;
    Ok(out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// Writes the files below `root` as they were at `rev` into `dest` (which must exist).
pub fn export_tree(root: &Path, rev: &str, dest: &Path) -> Result<(), Failure> {
    check_revision(root, rev)?;
    let prefix = stdout_of(root, &["rev-parse", "--show-prefix"])?;
    let prefix = prefix.trim().trim_end_matches('/');
    let treeish = if prefix.is_empty() {
        format!("{rev}^{{tree}}")
    } else {
        format!("{rev}:{prefix}")
    };
    let out = git(root, &["archive", "--format=tar", &treeish])?;
    if !out.status.success() {
        return Err(Failure::Run(anyhow!(
            "git archive {treeish}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    tar::Archive::new(out.stdout.as_slice())
        .unpack(dest)
        .with_context(|| format!("unpacking {treeish} into {}", dest.display()))
        .map_err(Failure::Run)
}
