//! The var files `include_vars: dir:` reads, in Ansible's order: every folder below it sorted by
//! path (`depth` counts those folders, as Ansible's walk does), each folder's files sorted by
//! name, less the role's own `vars/main.yml`, names `files_matching` does not find or
//! `ignore_files` ends with, and (with `ignore_unknown_extensions`) names without one of the
//! `extensions`. The messages are Ansible's.

use std::path::{Path, PathBuf};

use regex::Regex;

/// What selects the files.
#[derive(Debug, Default)]
pub struct DirOptions {
    /// How many folders of the sorted walk to read (0: all).
    pub depth: usize,
    /// A regular expression a file's name must contain.
    pub files_matching: Option<String>,
    /// Regular expressions a file's name must not end with.
    pub ignore_files: Vec<String>,
    /// The extensions of var files (default yaml, yml, json).
    pub extensions: Option<Vec<String>>,
    /// Leave out files without one of `extensions` instead of failing.
    pub ignore_unknown_extensions: bool,
}

/// Every folder below `root` (itself first), sorted by path, following links as Ansible does.
fn walk(root: &Path) -> Vec<(PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir() {
                pending.push(entry.path());
            } else {
                files.push(name);
            }
        }
        files.sort();
        out.push((dir, files));
    }
    out.sort_by(|a, b| a.0.as_os_str().cmp(b.0.as_os_str()));
    out
}

/// The files to read below `root` (an absolute folder), or Ansible's message for the first
/// that may not be read. `role_vars_main` is the role's `vars/main.yml`, never read again.
pub fn var_files(
    root: &Path,
    options: &DirOptions,
    role_vars_main: Option<&Path>,
) -> Result<Vec<PathBuf>, String> {
    let matcher = match &options.files_matching {
        Some(re) => Some(Regex::new(re).map_err(|e| format!("files_matching: {e}"))?),
        None => None,
    };
    let ignored = options
        .ignore_files
        .iter()
        .map(|f| {
            Regex::new(&format!("{f}$")).map_err(|_| format!("Invalid regular expression: {f}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let default = ["yaml", "yml", "json"].map(str::to_owned).to_vec();
    let extensions = options.extensions.as_ref().unwrap_or(&default);
    // Python's splitext: a name without an extension has the extension "".
    let valid = |name: &str| {
        let extension = Path::new(name)
            .extension()
            .map(|e| e.to_string_lossy().into_owned())
            .unwrap_or_default();
        extensions.contains(&extension)
    };
    let mut out = Vec::new();
    for (depth, (dir, files)) in walk(root).into_iter().enumerate() {
        if options.depth != 0 && depth >= options.depth {
            break;
        }
        for name in files {
            let path = dir.join(&name);
            if role_vars_main == Some(path.as_path())
                || matcher.as_ref().is_some_and(|m| !m.is_match(&name))
                || ignored.iter().any(|re| re.is_match(&name))
            {
                continue;
            }
            if !valid(&name) {
                if options.ignore_unknown_extensions {
                    continue;
                }
                return Err(format!(
                    "{} does not have a valid extension: {}",
                    path.display(),
                    extensions.join(", ")
                ));
            }
            out.push(path);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for (path, text) in [
            ("all/b.yml", "b: 1"),
            ("all/a.yml", "a: 1"),
            ("all/sub/c.yml", "c: 1"),
            ("all/notes.txt", "x"),
            ("all/a.yml.bak", "x"),
        ] {
            let file = dir.path().join(path);
            std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
            std::fs::write(file, text).expect("write");
        }
        dir
    }

    fn names(files: &[PathBuf], root: &Path) -> Vec<String> {
        files
            .iter()
            .map(|f| f.strip_prefix(root).expect("below").display().to_string())
            .collect()
    }

    #[test]
    fn folders_in_path_order_files_in_name_order() {
        let dir = tree();
        let root = dir.path().join("all");
        let options = DirOptions {
            ignore_unknown_extensions: true,
            ..DirOptions::default()
        };
        let files = var_files(&root, &options, None).expect("files");
        assert_eq!(names(&files, &root), ["a.yml", "b.yml", "sub/c.yml"]);
        let shallow = DirOptions {
            depth: 1,
            ..options
        };
        let files = var_files(&root, &shallow, None).expect("files");
        assert_eq!(names(&files, &root), ["a.yml", "b.yml"]);
    }

    #[test]
    fn an_unknown_extension_fails_unless_ignored_and_ignore_files_end_a_name() {
        let dir = tree();
        let root = dir.path().join("all");
        let error = var_files(&root, &DirOptions::default(), None).expect_err("bak");
        assert!(error.ends_with("a.yml.bak does not have a valid extension: yaml, yml, json"));
        let options = DirOptions {
            ignore_files: vec!["bak".into(), "txt".into()],
            files_matching: Some("^[ab]".into()),
            ..DirOptions::default()
        };
        let files = var_files(&root, &options, None).expect("files");
        assert_eq!(names(&files, &root), ["a.yml", "b.yml"]);
    }
}
