//! `find`: files of the image matching patterns, registered as `files` and `matched`.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text, TextList};

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
