//! What lookups share while a task is planned: where they look (the role's folders, relative
//! to the project root), what they read (inputs of the image), and how they fail.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use minijinja::{Error, ErrorKind};

#[derive(Default)]
struct Search {
    root: PathBuf,
    /// Folders relative to the root, in search order.
    dirs: Vec<PathBuf>,
    /// Files and folders lookups read, relative to the root.
    read: Vec<PathBuf>,
}

thread_local! {
    static SEARCH: RefCell<Option<Search>> = const { RefCell::new(None) };
}

/// Where lookups look for the tasks rendered next (the role's `files/`, `templates/`, `vars/`,
/// the role, the task file's folder), all relative to `root`.
pub fn set_search(root: &Path, dirs: Vec<PathBuf>) {
    SEARCH.with(|s| {
        let read = s
            .borrow_mut()
            .take()
            .map(|old| old.read)
            .unwrap_or_default();
        *s.borrow_mut() = Some(Search {
            root: root.to_owned(),
            dirs,
            read,
        });
    });
}

/// The files lookups read since the last call, relative to the root.
pub fn take_reads() -> Vec<PathBuf> {
    SEARCH.with(|s| {
        s.borrow_mut()
            .as_mut()
            .map(|search| std::mem::take(&mut search.read))
            .unwrap_or_default()
    })
}

pub(super) fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// A file a lookup looked for and did not find, which `errors='ignore'` passes over.
pub(super) fn not_found(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::TemplateNotFound, message.into())
}

/// Why a lookup failed as Ansible's lookup plugin would, in its words.
#[derive(Debug, thiserror::Error)]
#[error("the lookup failed")]
struct LookupFailed;

/// A lookup failing as Ansible's plugin fails, which `errors='ignore'`/`'warn'` passes over
/// (unlike imgbuild's refusals to read the build host or to use build-time values).
pub(super) fn lookup_failed(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into()).with_source(LookupFailed)
}

pub(super) fn is_lookup_failure(e: &Error) -> bool {
    e.kind() == ErrorKind::TemplateNotFound
        || std::error::Error::source(e).is_some_and(|s| s.is::<LookupFailed>())
}

/// The role's file `name` (found as `lookup('file')` finds it), relative to the root.
pub(super) fn find_file(name: &str) -> Result<Option<PathBuf>, Error> {
    find(name)
}

/// The project root and the folders lookups search, in order.
pub(super) fn search_dirs() -> (PathBuf, Vec<PathBuf>) {
    SEARCH.with(|s| {
        s.borrow()
            .as_ref()
            .map(|s| (s.root.clone(), s.dirs.clone()))
            .unwrap_or_default()
    })
}

/// A loader for `{% include %}`, `{% import %}` and `{% from %}` of a template file or a
/// template lookup: beside the template (`beside`, relative to the root), then the folders
/// lookups search; each file it reads is recorded as an input.
pub(super) fn include_loader(
    beside: PathBuf,
) -> impl Fn(&str) -> Result<Option<String>, Error> + Send + Sync {
    let (root, dirs) = search_dirs();
    move |name: &str| {
        if name.starts_with('/') || name.split('/').any(|c| c == "..") {
            return Ok(None);
        }
        let candidates =
            std::iter::once(beside.join(name)).chain(dirs.iter().map(|d| d.join(name)));
        for candidate in candidates {
            if let Ok(text) = std::fs::read_to_string(root.join(&candidate)) {
                record_read(candidate);
                return Ok(Some(text));
            }
        }
        Ok(None)
    }
}

/// Records `path` (relative to the root) as read, an input of the image.
pub(super) fn record_read(path: PathBuf) {
    SEARCH.with(|s| {
        if let Some(search) = s.borrow_mut().as_mut() {
            search.read.push(path);
        }
    });
}

/// The text of a file [`find_file`] found.
pub(super) fn read_role_file(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(root().join(path))
        .map_err(|e| lookup_failed(format!("{}: {e}", path.display())))
}

/// `name` relative to the project root when it is an absolute path inside it.
pub(super) fn in_project(name: &str) -> std::borrow::Cow<'_, str> {
    let root = root();
    match Path::new(name).strip_prefix(&root) {
        Ok(rel) if name.starts_with('/') && root.is_absolute() => {
            std::borrow::Cow::Owned(rel.display().to_string())
        }
        _ => std::borrow::Cow::Borrowed(name),
    }
}

pub(super) fn safe(name: &str) -> Result<(), Error> {
    // An absolute path is a file of the machine running the build, read as Ansible's
    // controller reads it (recorded as an input like the role's files); a relative one stays
    // inside the folders lookups search.
    if !name.starts_with('/') && name.split('/').any(|c| c == "..") {
        return Err(invalid(format!(
            "lookup: '{name}' leaves the folders lookups search ('..'); name the file from the role's files/ or by its absolute path"
        )));
    }
    Ok(())
}

/// The first search folder holding `name`, as a path relative to the root.
pub(super) fn find(name: &str) -> Result<Option<PathBuf>, Error> {
    let name = &*in_project(name);
    safe(name)?;
    SEARCH.with(|s| {
        let mut s = s.borrow_mut();
        let Some(search) = s.as_mut() else {
            return Err(invalid(
                "lookup() of files works while planning; this value is rendered at build time",
            ));
        };
        let candidates = search
            .dirs
            .iter()
            .map(|d| d.join(name))
            .chain(std::iter::once(PathBuf::from(name)));
        for candidate in candidates {
            if search.root.join(&candidate).exists() {
                search.read.push(candidate.clone());
                return Ok(Some(candidate));
            }
        }
        Ok(None)
    })
}

/// The first search folder that exists (recorded as read).
pub(super) fn first_dir() -> Option<PathBuf> {
    SEARCH.with(|s| {
        let mut s = s.borrow_mut();
        let search = s.as_mut()?;
        let found = search
            .dirs
            .iter()
            .find(|d| search.root.join(d).is_dir())
            .cloned()?;
        search.read.push(found.clone());
        Some(found)
    })
}

pub(super) fn root() -> PathBuf {
    SEARCH.with(|s| {
        s.borrow()
            .as_ref()
            .map(|s| s.root.clone())
            .unwrap_or_default()
    })
}
