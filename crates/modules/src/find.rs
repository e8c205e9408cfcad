//! `find`: files of the image matching patterns, registered as `files` and `matched`.
//!
//! Files of the image matching patterns.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::pathinfo::name_of;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text, TextList};
use crate::rootfs::{Kind, Meta, RootFs};
use regex::Regex;
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};

crate::choices!(
    /// What kind of entries to list.
    FileType { File => "file", Directory => "directory", Link => "link", Any => "any" }
);

/// Parameters of `find`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FindParams {
    /// Folders to search.
    #[serde(alias = "name", alias = "path")]
    pub paths: TextList,
    /// Shell globs (or regular expressions with `use_regex`) of base names.
    #[serde(alias = "pattern")]
    pub patterns: Option<TextList>,
    /// Globs or expressions of base names to leave out.
    #[serde(alias = "exclude")]
    pub excludes: Option<TextList>,
    /// A regular expression the file content must match: at the start of a line (Python's
    /// `match`), or anywhere with `read_whole_file`.
    pub contains: Option<Text>,
    /// Search `contains` in the whole file rather than line by line.
    pub read_whole_file: Option<Flag>,
    /// Kind of entries (default `file`).
    pub file_type: Option<Choice<FileType>>,
    /// Descend into subfolders.
    pub recurse: Option<Flag>,
    /// Include hidden entries.
    pub hidden: Option<Flag>,
    /// Patterns are regular expressions.
    pub use_regex: Option<Flag>,
    /// Follow symlinks.
    pub follow: Option<Flag>,
    /// Deepest level with `recurse`.
    pub depth: Option<Text>,
    /// Accepted.
    pub get_checksum: Option<Flag>,
}

impl Params for FindParams {}

/// `find`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "find",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<FindParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `find`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: FindParams = params(SPEC.name, args)?;
    let filter = FindFilter::new(&p)?;
    let recurse = flag(&p.recurse, false);
    let hidden = filter.hidden;
    let depth: Option<usize> = p
        .depth
        .as_ref()
        .and_then(|d| d.as_str().trim().parse().ok());
    let fs = ctx.target.fs();
    let mut files = Vec::new();
    let mut examined = 0usize;
    // A path that is not a folder is skipped with why, as Ansible's find skips it.
    let mut skipped = serde_json::Map::new();
    let mut stack: Vec<(PathBuf, usize)> = Vec::new();
    for path in &p.paths.0 {
        match fs.meta(Path::new(path))? {
            Some(meta) if meta.kind == Kind::Dir => stack.push((PathBuf::from(path), 1)),
            _ => {
                let why = format!("'{path}' is not a directory");
                skipped.insert(path.clone(), Json::String(why));
            }
        }
    }
    while let Some((dir, level)) = stack.pop() {
        let Ok(names) = fs.list(&dir) else { continue };
        if depth.is_some_and(|d| level > d) {
            // Ansible's os.walk still lists the folder one level past `depth` (and counts
            // what is in it as examined) before it stops there.
            examined += names.len();
            continue;
        }
        for name in names {
            let path = dir.join(&name);
            let Some(meta) = fs.meta(&path)? else {
                continue;
            };
            examined += 1;
            if meta.kind == Kind::Dir
                && recurse
                && depth.is_none_or(|d| level <= d)
                && (hidden || !name.starts_with('.'))
            {
                stack.push((path.clone(), level + 1));
            }
            if filter.keeps(fs, &name, &path, &meta)? {
                files.push(found_entry(fs, &path, &meta)?);
            }
        }
    }
    files.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    let matched = files.len();
    let msg = if skipped.is_empty() {
        "All paths examined"
    } else {
        "Not all paths examined, check warnings for details"
    };
    Ok(ModuleResult::changed(false)
        .with("files", Json::Array(files))
        .with("matched", matched)
        .with("examined", examined)
        .with("msg", msg)
        .with("skipped_paths", Json::Object(skipped)))
}

/// A test of a base name.
type NameMatch = Box<dyn Fn(&str) -> bool>;

/// What `find` keeps of the files it walks: name patterns and excludes, content, type, and
/// whether hidden files count.
struct FindFilter {
    patterns: Vec<NameMatch>,
    excludes: Vec<NameMatch>,
    contains: Option<Regex>,
    whole_file: bool,
    kind: FileType,
    hidden: bool,
}

impl FindFilter {
    /// The filter `find`'s parameters ask for; a bad pattern fails.
    fn new(p: &FindParams) -> Result<Self, ModuleError> {
        let use_regex = flag(&p.use_regex, false);
        let matcher = |patterns: &[String]| -> Result<Vec<NameMatch>, ModuleError> {
            patterns
                .iter()
                .flat_map(|p| p.split(','))
                .map(|p| -> Result<NameMatch, ModuleError> {
                    let p = p.trim().to_owned();
                    if use_regex {
                        let re = Regex::new(&format!("^(?:{p})$"))
                            .map_err(|e| ModuleError::new(format!("pattern '{p}': {e}")))?;
                        Ok(Box::new(move |n: &str| re.is_match(n)))
                    } else {
                        Ok(Box::new(move |n: &str| ansible::glob::matches(&p, n)))
                    }
                })
                .collect()
        };
        let patterns = matcher(p.patterns.as_ref().map(|l| l.0.as_slice()).unwrap_or(&[]))?;
        let excludes = matcher(p.excludes.as_ref().map(|l| l.0.as_slice()).unwrap_or(&[]))?;
        let whole_file = flag(&p.read_whole_file, false);
        let contains = p
            .contains
            .as_ref()
            .map(|c| {
                // Line by line Python's `match` anchors at the line's start.
                let anchored = if whole_file {
                    c.as_str().to_owned()
                } else {
                    format!("^(?:{})", c.as_str())
                };
                Regex::new(&anchored).map_err(|e| ModuleError::new(format!("contains: {e}")))
            })
            .transpose()?;
        let kind = match &p.file_type {
            Some(Choice::Known(k)) => *k,
            _ => FileType::File,
        };
        Ok(Self {
            patterns,
            excludes,
            contains,
            whole_file,
            kind,
            hidden: flag(&p.hidden, false),
        })
    }

    /// Whether the file `name` at `path` is one `find` reports.
    fn keeps(
        &self,
        fs: &RootFs,
        name: &str,
        path: &Path,
        meta: &Meta,
    ) -> Result<bool, ModuleError> {
        if !self.hidden && name.starts_with('.') {
            return Ok(false);
        }
        let kind_ok = match self.kind {
            FileType::Any => true,
            FileType::File => meta.kind == Kind::File,
            FileType::Directory => meta.kind == Kind::Dir,
            FileType::Link => meta.kind == Kind::Symlink,
        };
        let name_ok = (self.patterns.is_empty() || self.patterns.iter().any(|m| m(name)))
            && !self.excludes.iter().any(|m| m(name));
        if !kind_ok || !name_ok {
            return Ok(false);
        }
        if let Some(re) = &self.contains {
            if meta.kind != Kind::File
                || !content_matches(
                    re,
                    &String::from_utf8_lossy(&fs.read(path)?),
                    self.whole_file,
                )
            {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// One file as `find` reports it: its path, mode, owner, size, times and type.
fn found_entry(fs: &RootFs, path: &Path, meta: &Meta) -> Result<Json, ModuleError> {
    let mut entry = json!({
        "path": path.display().to_string(),
        "mode": format!("{:04o}", meta.mode & 0o7777),
        "uid": meta.uid,
        "gid": meta.gid,
        "size": meta.size,
        "mtime": meta.mtime,
        "isdir": meta.kind == Kind::Dir,
        "isreg": meta.kind == Kind::File,
        "islnk": meta.kind == Kind::Symlink,
    });
    if let Some(name) = name_of(fs, "/etc/passwd", meta.uid)? {
        entry["pw_name"] = json!(name);
    }
    if let Some(name) = name_of(fs, "/etc/group", meta.gid)? {
        entry["gr_name"] = json!(name);
    }
    Ok(entry)
}

/// Whether `text` holds `re` as Ansible's find looks: Python's `search` of the whole text, or
/// its `match` of one line; either way Python's `$` also matches before a final newline.
fn content_matches(re: &Regex, text: &str, whole_file: bool) -> bool {
    let holds = |s: &str| re.is_match(s) || s.strip_suffix('\n').is_some_and(|s| re.is_match(s));
    if whole_file {
        return holds(text);
    }
    text.split_inclusive('\n').any(holds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_matches_lines_at_their_start_or_the_whole_file() {
        let text = "OK\nKO\nxKO yes\n";
        let re = |p: &str, whole: bool| {
            let anchored = if whole {
                p.to_owned()
            } else {
                format!("^(?:{p})")
            };
            content_matches(&Regex::new(&anchored).expect("regex"), text, whole)
        };
        assert!(re("KO$", false));
        assert!(!re("yes", false), "match anchors at the line's start");
        assert!(re("xKO", false));
        assert!(!re("KO$", true), "the whole file ends with 'yes'");
        assert!(re("yes$", true));
    }
}
