//! `user`: accounts in the rootfs's passwd and shadow.

use serde::{Deserialize, Serialize};

use super::lineinfile::LineState;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Int, Text, TextList};

crate::choices!(
    /// When to replace the password.
    UpdatePassword { Always => "always", OnCreate => "on_create" }
);

/// Parameters of `user`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UserParams {
    /// Login name.
    #[serde(alias = "user")]
    pub name: Text,
    /// Present or absent.
    pub state: Option<Choice<LineState>>,
    /// User id.
    pub uid: Option<Int>,
    /// Primary group.
    pub group: Option<Text>,
    /// Supplementary groups.
    pub groups: Option<TextList>,
    /// Add to `groups` instead of replacing them.
    pub append: Option<Flag>,
    /// GECOS comment.
    pub comment: Option<Text>,
    /// Home directory.
    pub home: Option<Text>,
    /// Create the home directory.
    #[serde(alias = "createhome")]
    pub create_home: Option<Flag>,
    /// Login shell.
    pub shell: Option<Text>,
    /// A system account (uid below 1000, no home by default).
    pub system: Option<Flag>,
    /// Crypted password (never printed).
    pub password: Option<Text>,
    /// Lock the password.
    pub password_lock: Option<Flag>,
    /// When to update the password.
    pub update_password: Option<Choice<UpdatePassword>>,
    /// Remove the home directory with `absent`.
    pub remove: Option<Flag>,
    /// Force removal.
    pub force: Option<Flag>,
    /// Move the home directory when `home` changes.
    pub move_home: Option<Flag>,
    /// Allow a non-unique uid.
    pub non_unique: Option<Flag>,
    /// Skeleton directory.
    pub skeleton: Option<Text>,
    /// Account expiry (epoch seconds).
    pub expires: Option<serde_json::Value>,
    /// Use local files only.
    pub local: Option<Flag>,
    /// Home directory umask.
    pub umask: Option<Text>,
    /// Generate an SSH key.
    pub generate_ssh_key: Option<Flag>,
    /// SSH key bits.
    pub ssh_key_bits: Option<Int>,
    /// SSH key type.
    pub ssh_key_type: Option<Text>,
    /// SSH key file.
    pub ssh_key_file: Option<Text>,
    /// SSH key comment.
    pub ssh_key_comment: Option<Text>,
    /// SSH key passphrase.
    pub ssh_key_passphrase: Option<Text>,
    /// SELinux user.
    pub seuser: Option<Text>,
}

impl Params for UserParams {}

/// `user`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "user",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<UserParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};
