//! `ini_file` (`community.general.ini_file`): one option of an INI file of the image.

use serde::{Deserialize, Serialize};

use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Mode, Text};

crate::choices!(
    /// Whether the option (or, without option, the section) is there.
    IniState { Present => "present", Absent => "absent" }
);

/// Parameters of `ini_file`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IniFileParams {
    /// The file.
    #[serde(alias = "dest")]
    pub path: Text,
    /// The section (none: before the first section).
    pub section: Option<Text>,
    /// The option.
    #[serde(alias = "key")]
    pub option: Option<Text>,
    /// The value.
    pub value: Option<Text>,
    /// Present or absent.
    pub state: Option<Choice<IniState>>,
    /// `key=value` instead of `key = value`.
    pub no_extra_spaces: Option<Flag>,
    /// Create the file if missing (default true).
    pub create: Option<Flag>,
    /// Write `option` alone (no `=`) when value is missing.
    pub allow_no_value: Option<Flag>,
    /// Mode.
    pub mode: Option<Mode>,
    /// Owner.
    pub owner: Option<Text>,
    /// Group.
    pub group: Option<Text>,
    /// Accepted.
    pub backup: Option<Flag>,
    /// Extended attributes (`chattr` letters; accepted, not applied in an image build).
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for IniFileParams {}

/// `ini_file`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "ini_file",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<IniFileParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
