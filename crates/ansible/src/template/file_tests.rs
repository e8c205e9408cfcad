//! Ansible's file tests (`directory`/`is_dir`, `file`/`is_file`, `link`/`is_link`, `exists`,
//! `link_exists`, `abs`/`is_abs`, `same_file`/`is_same_file`, `mount`/`is_mount`). A relative
//! path is a file of the project, found as lookups find one; an absolute path is tested on the
//! machine running the build, as Ansible tests it on its controller.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use minijinja::{Error, ErrorKind};

/// Where `path` is on this machine: absolute as given, relative as the project file it names
/// (`None`: no such project file).
fn resolve(path: &str) -> Result<Option<PathBuf>, Error> {
    let path = &*super::lookup_state::in_project(path);
    if path.starts_with('/') {
        return Ok(Some(PathBuf::from(path)));
    }
    let (root, _) = super::lookup_state::search_dirs();
    Ok(super::lookup_state::find_file(path)?.map(|found| root.join(found)))
}

fn with_path(test: fn(&Path) -> bool) -> impl Fn(String) -> Result<bool, Error> {
    move |path: String| Ok(resolve(&path)?.is_some_and(|p| test(&p)))
}

/// Python's `os.path.ismount`.
fn is_mount(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if meta.file_type().is_symlink() {
        return false;
    }
    let Ok(parent) = std::fs::symlink_metadata(path.join("..")) else {
        return false;
    };
    meta.dev() != parent.dev() || meta.ino() == parent.ino()
}

/// Python's `os.path.samefile`, which fails on a path that does not exist.
fn same_file(a: String, b: String) -> Result<bool, Error> {
    let stat = |p: &str| -> Result<std::fs::Metadata, Error> {
        let missing = || {
            Error::new(
                ErrorKind::InvalidOperation,
                format!("[Errno 2] No such file or directory: '{p}'"),
            )
        };
        let path = resolve(p)?.ok_or_else(missing)?;
        std::fs::metadata(path).map_err(|_| missing())
    };
    let (a, b) = (stat(&a)?, stat(&b)?);
    Ok(a.dev() == b.dev() && a.ino() == b.ino())
}

/// Registers the file tests on `env`.
pub fn register(env: &mut minijinja::Environment<'static>) {
    for name in ["directory", "is_dir"] {
        env.add_test(name, with_path(Path::is_dir));
    }
    for name in ["file", "is_file"] {
        env.add_test(name, with_path(Path::is_file));
    }
    for name in ["link", "is_link"] {
        env.add_test(name, with_path(Path::is_symlink));
    }
    env.add_test("exists", with_path(Path::exists));
    env.add_test(
        "link_exists",
        with_path(|p| std::fs::symlink_metadata(p).is_ok()),
    );
    for name in ["abs", "is_abs"] {
        env.add_test(name, |path: String| path.starts_with('/'));
    }
    for name in ["same_file", "is_same_file"] {
        env.add_test(name, same_file);
    }
    for name in ["mount", "is_mount"] {
        env.add_test(name, with_path(is_mount));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_are_tested_on_this_machine() {
        assert!(is_mount(Path::new("/")));
        assert!(!is_mount(Path::new("/does_not_exist")));
        assert_eq!(same_file("/".into(), "/".into()).ok(), Some(true));
        assert!(same_file("/".into(), "/does_not_exist".into()).is_err());
        let dir = with_path(Path::is_dir);
        assert_eq!(dir("/".into()).ok(), Some(true));
        assert_eq!(dir("/does_not_exist".into()).ok(), Some(false));
    }
}
