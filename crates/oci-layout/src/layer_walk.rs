//! One walk over a layer tar's entries, shared by everything that applies a layer (the
//! engine's extraction onto a folder, which the image crate, boot and the registry cache use;
//! verify's snapshot in memory): each entry's name checked and made relative, and what it
//! means for the layers below ([`Whiteout`]) read once.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::Whiteout;

/// What one entry of a layer does to the tree below it.
pub enum LayerChange<'e, 'a, R: Read> {
    /// An entry to put at `path` (relative to the layer's root).
    Put {
        /// Where it goes.
        path: PathBuf,
        /// The entry, its header and its content.
        entry: &'e mut tar::Entry<'a, R>,
    },
    /// `.wh..wh..opq`: hides what the layers below put in the folder `dir` (`""`: the root).
    Opaque {
        /// The folder.
        dir: PathBuf,
    },
    /// `.wh.<name>`: hides `path`.
    Hide {
        /// What is hidden.
        path: PathBuf,
    },
}

/// How entries are read.
#[derive(Debug, Clone, Copy, Default)]
pub struct WalkOptions {
    /// Read `.wh.` names as whiteouts (a layer); else they are ordinary entries (an archive).
    pub whiteouts: bool,
    /// Leading path components dropped from every name (tar's `--strip-components`).
    pub strip_components: usize,
}

/// Why a walk stopped.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    /// The archive is not a valid tar (or is cut short).
    #[error("not a valid archive: {0}")]
    Corrupt(String),
    /// An entry's name is absolute or climbs out with `..`.
    #[error("refused: entry '{entry}' {why}")]
    Unsafe {
        /// The entry's name in the archive.
        entry: String,
        /// What is wrong with it.
        why: String,
    },
}

/// Walks the tar `reader`, calling `visit` with each entry's name as written and what it
/// changes, in archive order. An entry whose name is empty (`./`, or all stripped) is passed
/// over.
pub fn walk_layer<R, E>(
    reader: R,
    options: WalkOptions,
    mut visit: impl FnMut(&str, LayerChange<'_, '_, R>) -> Result<(), E>,
) -> Result<(), E>
where
    R: Read,
    E: From<WalkError>,
{
    let corrupt = |e: std::io::Error| E::from(WalkError::Corrupt(e.to_string()));
    let mut archive = tar::Archive::new(reader);
    for entry in archive.entries().map_err(corrupt)? {
        let mut entry = entry.map_err(corrupt)?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let path = relative(&name).map_err(|why| WalkError::Unsafe {
            entry: name.clone(),
            why,
        })?;
        let path: PathBuf = path.components().skip(options.strip_components).collect();
        if path.as_os_str().is_empty() {
            continue;
        }
        let what = match options.whiteouts {
            true => path
                .file_name()
                .and_then(|n| n.to_str())
                .map_or(Whiteout::None, Whiteout::of),
            false => Whiteout::None,
        };
        let dir = || path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
        let change = match what {
            Whiteout::None => LayerChange::Put {
                path: path.clone(),
                entry: &mut entry,
            },
            Whiteout::Opaque => LayerChange::Opaque { dir: dir() },
            Whiteout::Hides(hidden) => LayerChange::Hide {
                path: dir().join(hidden),
            },
        };
        visit(&name, change)?;
    }
    Ok(())
}

/// The normal components of an archive name; `Err` for absolute names and `..`.
pub fn relative(name: &str) -> Result<PathBuf, String> {
    let mut out = PathBuf::new();
    for c in Path::new(name).components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Err("has an absolute path".into()),
            Component::ParentDir => return Err("climbs out with '..'".into()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_of(names: &[&str]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for name in names {
            let mut header = tar::Header::new_gnu();
            header.set_size(1);
            header.set_mode(0o644);
            header.set_cksum();
            builder
                .append_data(&mut header, name, &b"x"[..])
                .expect("append");
        }
        builder.into_inner().expect("tar")
    }

    fn walk(names: &[&str], options: WalkOptions) -> Result<Vec<String>, WalkError> {
        let data = tar_of(names);
        let mut seen = Vec::new();
        walk_layer(&data[..], options, |_, change| {
            seen.push(match change {
                LayerChange::Put { path, .. } => format!("put {}", path.display()),
                LayerChange::Opaque { dir } => format!("opaque {}", dir.display()),
                LayerChange::Hide { path } => format!("hide {}", path.display()),
            });
            Ok::<_, WalkError>(())
        })?;
        Ok(seen)
    }

    #[test]
    fn names_are_relative_and_whiteouts_read_in_a_layer_only() {
        let names = [
            "./etc/motd",
            "etc/.wh.issue",
            "root/.wh..wh..opq",
            ".wh..wh..opq",
        ];
        let layer = WalkOptions {
            whiteouts: true,
            ..WalkOptions::default()
        };
        assert_eq!(
            walk(&names, layer).expect("walk"),
            ["put etc/motd", "hide etc/issue", "opaque root", "opaque "]
        );
        assert_eq!(
            walk(&names, WalkOptions::default()).expect("walk")[1],
            "put etc/.wh.issue"
        );
    }

    #[test]
    fn stripped_names_and_refused_ones() {
        let strip = WalkOptions {
            strip_components: 1,
            ..WalkOptions::default()
        };
        assert_eq!(walk(&["app", "app/bin"], strip).expect("walk"), ["put bin"]);
        assert_eq!(relative("/etc/x"), Err("has an absolute path".to_owned()));
        assert_eq!(
            relative("a/../../x"),
            Err("climbs out with '..'".to_owned())
        );
    }
}
