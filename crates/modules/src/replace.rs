//! `replace`: every match of a regular expression in a file of the image replaced.
//!
//! Every match of an expression in a file of the image.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::attrs;
use super::lineinfile_edit::python_backrefs;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Mode, Text};
use crate::rootfs::Kind;
use fancy_regex::Regex;
use serde_json::Value as Json;
use std::path::Path;

/// Parameters of `replace`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaceParams {
    /// The file.
    #[serde(alias = "dest", alias = "destfile", alias = "name")]
    pub path: Text,
    /// The regular expression (Python syntax, multiline mode).
    pub regexp: Text,
    /// The replacement (`\1`, `\g<name>` backreferences); empty removes the matches.
    pub replace: Option<Text>,
    /// Only after the first match of this expression.
    pub after: Option<Text>,
    /// Only before the first match of this expression.
    pub before: Option<Text>,
    /// Mode.
    pub mode: Option<Mode>,
    /// Owner.
    pub owner: Option<Text>,
    /// Group.
    pub group: Option<Text>,
    /// Accepted.
    pub backup: Option<Flag>,
    /// Accepted.
    pub encoding: Option<Text>,
    /// Command validating the new file.
    pub validate: Option<Text>,
    /// Extended attributes (`chattr` letters; accepted, not applied in an image build).
    #[serde(alias = "attr")]
    pub attributes: Option<Text>,
}

impl Params for ReplaceParams {
    fn check(&self) -> Result<(), String> {
        super::spec::check_python_regex("regexp", self.regexp.as_str())?;
        for (name, pattern) in [("after", &self.after), ("before", &self.before)] {
            if let Some(pattern) = pattern.as_ref().map(|p| p.as_str()) {
                super::spec::check_python_regex(name, pattern)?;
            }
        }
        Ok(())
    }
}

/// `replace`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "replace",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<ReplaceParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `replace`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: ReplaceParams = params(SPEC.name, args)?;
    let path = Path::new(p.path.as_str());
    let fail = |rc: i64, msg: String| {
        let mut error = ModuleError::new(msg);
        error.fields.insert("rc".into(), Json::from(rc));
        error
    };
    if ctx
        .target
        .fs()
        .meta_follow(path)?
        .is_some_and(|m| m.kind == Kind::Dir)
    {
        return Err(fail(
            256,
            format!("Path {} is a directory !", path.display()),
        ));
    }
    let Some(before) = ctx.target.fs().read_text_opt(path)? else {
        return Err(fail(
            257,
            format!("Path {} does not exist !", path.display()),
        ));
    };
    let replaced = replace_text(
        &before,
        p.regexp.as_str(),
        p.replace.as_ref().map_or("", |r| r.as_str()),
        p.after.as_ref().map(|a| a.as_str()),
        p.before.as_ref().map(|b| b.as_str()),
    )?;
    let (after, count) = match replaced {
        Replaced::NoSection(pattern) => {
            let msg =
                format!("Pattern for before/after params did not match the given file: {pattern}");
            let mut result = ModuleResult::changed(false).with("msg", msg.as_str());
            result.msg = Some(msg);
            return Ok(result.with("rc", 0));
        }
        Replaced::Done(after, count) => (after, count),
    };
    let changed = count > 0 && after != before;
    let mut result = ModuleResult::changed(changed);
    let fs = ctx.target.fs();
    if changed {
        if ctx.diff {
            result.diff = Some((path.display().to_string(), before.clone(), after.clone()));
        }
        if !ctx.check {
            if flag(&p.backup, false) {
                let name = super::pathinfo::backup(fs, path)?;
                result.fields.insert("backup_file".into(), Json::from(name));
            }
            fs.write_atomic(path, after.as_bytes(), None)?;
        }
    }
    let attrs_changed = attrs::apply(fs, path, &p.owner, &p.group, &p.mode, ctx.check)?;
    // Ansible's check_file_attrs: a change of the file's attributes is said after the text's.
    let mut msg = if changed {
        format!("{count} replacements made")
    } else {
        String::new()
    };
    if attrs_changed {
        if changed {
            msg.push_str(" and ");
        }
        msg.push_str("ownership, perms or SE linux context changed");
    }
    result.changed |= attrs_changed;
    result.msg = (!msg.is_empty()).then(|| msg.clone());
    result.fields.insert("msg".into(), Json::from(msg));
    result.fields.insert("rc".into(), Json::from(0));
    Ok(result)
}

/// What `replace` does to a text.
#[derive(Debug, PartialEq)]
enum Replaced {
    /// `after`/`before` found no section: this pattern did not match.
    NoSection(String),
    /// The new text and how many matches were replaced.
    Done(String, usize),
}

/// Ansible's replace on `contents`: the section between `after` and `before` (Python's
/// `after(?P<subsection>.*?)before` with DOTALL, the section running to the end or from the
/// start when one is missing), and in it every match of `regexp` (MULTILINE) replaced. The
/// patterns are Python's, look-around and backreferences included (`fancy_regex`).
fn replace_text(
    contents: &str,
    regexp: &str,
    replace: &str,
    after: Option<&str>,
    before: Option<&str>,
) -> Result<Replaced, ModuleError> {
    let compile = |pattern: &str| {
        Regex::new(pattern).map_err(|e| ModuleError::new(format!("regexp '{pattern}': {e}")))
    };
    let failed = |e: fancy_regex::Error| ModuleError::new(format!("regexp '{regexp}': {e}"));
    let pattern = match (
        after.filter(|a| !a.is_empty()),
        before.filter(|b| !b.is_empty()),
    ) {
        (Some(a), Some(b)) => Some(format!("{a}(?P<subsection>.*?){b}")),
        (Some(a), None) => Some(format!("{a}(?P<subsection>.*)")),
        (None, Some(b)) => Some(format!("(?P<subsection>.*){b}")),
        (None, None) => None,
    };
    let (start, end) = match &pattern {
        None => (0, contents.len()),
        Some(pattern) => {
            let section = compile(&format!("(?s){pattern}"))?
                .captures(contents)
                .map_err(failed)?
                .and_then(|c| c.name("subsection"))
                .map(|m| (m.start(), m.end()));
            match section {
                Some(range) => range,
                None => return Ok(Replaced::NoSection(pattern.clone())),
            }
        }
    };
    let re = compile(&format!("(?m){regexp}"))?;
    let section = &contents[start..end];
    let count = re.find_iter(section).filter(Result::is_ok).count();
    let replaced = re
        .try_replacen(section, 0, python_backrefs(replace).as_str())
        .map_err(failed)?;
    let text = format!("{}{}{}", &contents[..start], replaced, &contents[end..]);
    Ok(Replaced::Done(text, count))
}

#[cfg(test)]
mod replace_tests {
    use super::{replace_text, Replaced};

    const TEXT: &str =
        "The quick brown fox.\nWe promptly judged.\nJinxed wizards quilt.\nJaded zombies.\n";

    #[test]
    fn before_and_after_out_of_order_match_no_section() {
        let out = replace_text(TEXT, "e", "3", Some("quilt"), Some("promptly")).expect("ok");
        assert_eq!(
            out,
            Replaced::NoSection("quilt(?P<subsection>.*?)promptly".into())
        );
    }

    #[test]
    fn look_ahead_and_backreferences_are_pythons() {
        let sudoers = "ops ALL=(ALL) NOPASSWD: ALL\n# x NOPASSWD\nvagrant ALL=(ALL) NOPASSWD: ALL\n";
        let out = replace_text(sudoers, "^((?!#|vagrant).*)NOPASSWD(.*)", r"\1PASSWD\2", None, None)
            .expect("ok");
        assert_eq!(
            out,
            Replaced::Done(
                "ops ALL=(ALL) PASSWD: ALL\n# x NOPASSWD\nvagrant ALL=(ALL) NOPASSWD: ALL\n".into(),
                1
            )
        );
    }

    #[test]
    fn only_the_section_is_replaced() {
        let out = replace_text(TEXT, "e", "3", Some("promptly"), Some("quilt")).expect("ok");
        let Replaced::Done(text, count) = out else {
            panic!("a section")
        };
        assert_eq!(count, 2);
        assert!(
            text.starts_with("The quick brown fox.\nWe promptly judg3d.\nJinx3d wizards quilt.")
        );
    }
}
