//! `ini_file` (`community.general.ini_file`): one option of an INI file of the image.
//!
//! One option of an INI file of the image.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::attrs::FileAttrs;
use super::lineinfile::{read_lines, write_lines};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Mode, Text};
use serde_json::Value as Json;
use std::path::Path;

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

// How it runs in the rootfs.

/// `ini_file`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: IniFileParams = params(SPEC.name, args)?;
    let path = Path::new(p.path.as_str());
    let existing = read_lines(ctx, path)?;
    if existing.is_none() && !flag(&p.create, true) {
        let mut error = ModuleError::new(format!("Destination {} does not exist!", path.display()));
        error.fields.insert("rc".into(), Json::from(257));
        return Err(error);
    }
    // A file ini_file creates starts as one empty line, as community.general's does: its
    // first section follows a blank line, a first sectionless option comes before one.
    let (lines, before) = existing.unwrap_or_else(|| (vec![String::new()], String::new()));
    let absent = matches!(p.state, Some(Choice::Known(IniState::Absent)));
    let option = p.option.as_ref().map(|o| o.as_str().trim());
    let line = match (absent, option, &p.value) {
        (true, _, _) => None,
        (false, Some(o), Some(v)) if flag(&p.no_extra_spaces, false) => {
            Some(format!("{o}={}", v.as_str()))
        }
        (false, Some(o), Some(v)) => Some(format!("{o} = {}", v.as_str())),
        (false, Some(o), None) if flag(&p.allow_no_value, false) => Some(o.to_owned()),
        (false, Some(o), None) => Some(format!("{o} = ")),
        (false, None, _) => Some(String::new()),
    };
    let section = p.section.as_ref().map(|s| s.as_str().trim());
    let mut after = edit_ini(&lines, section, option, line.as_deref());
    if !absent && option.is_none() {
        // A section alone.
        if let Some(name) = section {
            if !lines.iter().any(|l| section_name(l) == Some(name)) {
                after.push(format!("[{name}]"));
            }
        }
    }
    let attrs = FileAttrs::new(&p.mode, &p.owner, &p.group, &p.backup);
    let msg = ini_message(&lines, &after, section, option, absent);
    let mut result = write_lines(ctx, path, &before, &after, &attrs)?;
    result.msg = Some(msg.into());
    Ok(result)
}

fn section_name(line: &str) -> Option<&str> {
    let t = line.trim();
    t.strip_prefix('[')?.strip_suffix(']').map(str::trim)
}

fn option_of(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if t.starts_with(['#', ';', '[']) || t.is_empty() {
        return None;
    }
    let end = t.find(['=', ':']).unwrap_or(t.len());
    Some(t[..end].trim())
}

/// The edited lines of an INI file: `option` of `section` set to `line`, or removed.
fn edit_ini(
    lines: &[String],
    section: Option<&str>,
    option: Option<&str>,
    line: Option<&str>,
) -> Vec<String> {
    // The section's range: [start, end) where start is after its header (0 for no section).
    let (start, end) = match section {
        None => (
            0,
            lines
                .iter()
                .position(|l| section_name(l).is_some())
                .unwrap_or(lines.len()),
        ),
        Some(name) => match lines.iter().position(|l| section_name(l) == Some(name)) {
            Some(header) => {
                let end = lines[header + 1..]
                    .iter()
                    .position(|l| section_name(l).is_some())
                    .map_or(lines.len(), |i| header + 1 + i);
                (header + 1, end)
            }
            None => {
                // A new section goes at the end, right after the last line (as Ansible's
                // ini_file writes it: no blank line before it).
                let mut out = lines.to_vec();
                if let (Some(_), Some(line)) = (option, line) {
                    out.push(format!("[{name}]"));
                    out.push(line.to_owned());
                }
                return out;
            }
        },
    };
    let mut out = lines.to_vec();
    match (option, line) {
        (None, None) => {
            // Absent without option: the whole section goes.
            let header = start.saturating_sub(1);
            if section.is_some() {
                out.drain(header..end);
            }
        }
        (None, Some(_)) => {}
        (Some(option), Some(line)) => {
            match (start..end).find(|&i| option_of(&out[i]) == Some(option)) {
                Some(i) => out[i] = line.to_owned(),
                None => {
                    let last = (start..end).rev().find(|&i| !out[i].trim().is_empty());
                    let at = last.map_or(start, |i| i + 1);
                    out.insert(at, line.to_owned());
                }
            }
        }
        (Some(option), None) => {
            let mut i = start;
            let mut end = end;
            while i < end {
                if option_of(&out[i]) == Some(option) {
                    out.remove(i);
                    end -= 1;
                } else {
                    i += 1;
                }
            }
        }
    }
    out
}

/// The `msg` Ansible's ini_file gives for what the edit did.
fn ini_message(
    before: &[String],
    after: &[String],
    section: Option<&str>,
    option: Option<&str>,
    absent: bool,
) -> &'static str {
    let section_was_there =
        section.is_none_or(|s| before.iter().any(|l| section_name(l) == Some(s)));
    match () {
        _ if before == after => "OK",
        _ if absent && option.is_none() => "section removed",
        _ if absent => "option changed",
        _ if !section_was_there => "section and option added",
        _ if after.len() > before.len() => "option added",
        _ => "option changed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn ini_set_replace_add_and_remove() {
        let base = lines("top = 1\n[main]\ngpgcheck = 0\n\n[other]\nx = y");
        let set = edit_ini(&base, Some("main"), Some("gpgcheck"), Some("gpgcheck = 1"));
        assert_eq!(
            set.join("\n"),
            "top = 1\n[main]\ngpgcheck = 1\n\n[other]\nx = y"
        );
        let added = edit_ini(&base, Some("main"), Some("enabled"), Some("enabled = 1"));
        assert_eq!(
            added.join("\n"),
            "top = 1\n[main]\ngpgcheck = 0\nenabled = 1\n\n[other]\nx = y"
        );
        let new_section = edit_ini(&base, Some("new"), Some("a"), Some("a = b"));
        // Matched with Ansible's ini_file: a new section follows the last line directly.
        assert!(new_section.join("\n").ends_with("x = y\n[new]\na = b"));
        let removed = edit_ini(&base, Some("other"), Some("x"), None);
        assert_eq!(
            removed.join("\n"),
            "top = 1\n[main]\ngpgcheck = 0\n\n[other]"
        );
        let no_section = edit_ini(&base, None, Some("top"), Some("top = 2"));
        assert_eq!(no_section[0], "top = 2");
        let gone = edit_ini(&base, Some("other"), None, None);
        assert_eq!(gone.join("\n"), "top = 1\n[main]\ngpgcheck = 0\n");
    }
}
