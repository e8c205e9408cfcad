//! `pam_limits` (`community.general.pam_limits`): one limit line in limits.conf of the image
//! (`* - memlock unlimited` is the classic for RDMA).
//!
//! One limit in a limits.conf file, edited line by line as community.general's
//! pam_limits edits it (whitespace-insensitive match of domain, type and item; use_max and
//! use_min; a new or changed line takes the task's comment, or else the first comment of the
//! file's limit lines, as that module does).

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::copy::{place, Placement};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Text};
use crate::types::Choices;
use serde_json::Value as Json;
use std::path::Path;

crate::choices!(
    /// Soft, hard or both.
    LimitType { Hard => "hard", Soft => "soft", Both => "-" }
);

/// Parameters of `pam_limits`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PamLimitsParams {
    /// User, `@group` or `*`.
    pub domain: Text,
    /// `hard`, `soft` or `-`.
    pub limit_type: Choice<LimitType>,
    /// `memlock`, `nofile`, `stack`, ...
    pub limit_item: Text,
    /// The value (`unlimited`, a number).
    pub value: Text,
    /// The file (default `/etc/security/limits.conf`).
    pub dest: Option<Text>,
    /// A comment at the end of the line.
    pub comment: Option<Text>,
    /// Keep the lower value when one is set (accepted, ignored: the recipe's value wins).
    pub use_min: Option<Flag>,
    /// Keep the higher value when one is set (accepted, ignored: the recipe's value wins).
    pub use_max: Option<Flag>,
    /// Accepted.
    pub backup: Option<Flag>,
}

impl Params for PamLimitsParams {}

/// `pam_limits`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "pam_limits",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<PamLimitsParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

const UNLIMITED: &[&str] = &["unlimited", "infinity", "-1"];

/// The value use_max or use_min keeps, given the value asked for and the one in the file.
fn combined(
    kind: &str,
    wanted: &str,
    actual: &str,
    max: bool,
    min: bool,
) -> Result<String, ModuleError> {
    let priority = matches!(kind, "nice" | "priority");
    let (actual_unlimited, wanted_unlimited) = if priority {
        (false, false)
    } else {
        (UNLIMITED.contains(&actual), UNLIMITED.contains(&wanted))
    };
    let number = |v: &str| {
        v.parse::<i64>()
            .map_err(|_| ModuleError::new(format!("pam_limits: '{v}' is not a number")))
    };
    Ok(match (max, min) {
        (true, _) if actual_unlimited => actual.to_owned(),
        (true, _) if wanted_unlimited => wanted.to_owned(),
        (true, _) => number(wanted)?.max(number(actual)?).to_string(),
        (_, true) if actual_unlimited => wanted.to_owned(),
        (_, true) if wanted_unlimited => actual.to_owned(),
        (_, true) => number(wanted)?.min(number(actual)?).to_string(),
        _ => wanted.to_owned(),
    })
}

/// The limit a task sets: its line's `domain type item`, and the value.
struct Limit<'a> {
    domain: &'a str,
    kind: &'a str,
    item: &'a str,
    value: &'a str,
}

impl Limit<'_> {
    /// The limits file's line for `value`, with `#comment` after it when there is one.
    fn line(&self, value: &str, comment: &str) -> String {
        let comment = if comment.is_empty() {
            String::new()
        } else {
            format!("\t#{comment}")
        };
        let Limit {
            domain, kind, item, ..
        } = self;
        format!("{domain}\t{kind}\t{item}\t{value}{comment}\n")
    }
}

/// The limits file `before` with the limit set: its line rewritten where it is (the value
/// combined with `use_max`/`use_min`), or added at the end. As Ansible's module, a line with no
/// `comment` of the task's takes the comment of the first limit line that has one.
fn set_limit(
    before: &str,
    limit: &Limit,
    mut comment: String,
    use_max: bool,
    use_min: bool,
) -> Result<String, ModuleError> {
    let mut after = String::new();
    let mut found = false;
    for line in before.split_inclusive('\n') {
        let collapsed = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.starts_with('#') || collapsed.is_empty() {
            after.push_str(line);
            continue;
        }
        if comment.is_empty() {
            comment = line
                .split_once('#')
                .map(|(_, c)| c.to_owned())
                .unwrap_or_default();
        }
        let data = collapsed.split('#').next().unwrap_or_default().trim_end();
        let fields: Vec<&str> = data.split(' ').collect();
        let [line_domain, line_kind, line_item, actual] = fields.as_slice() else {
            after.push_str(line);
            continue;
        };
        if (*line_domain, *line_kind, *line_item) != (limit.domain, limit.kind, limit.item) {
            after.push_str(line);
            continue;
        }
        found = true;
        let new_value = combined(limit.kind, limit.value, actual, use_max, use_min)?;
        if limit.value == *actual || new_value == *actual {
            after.push_str(line);
        } else {
            after.push_str(&limit.line(&new_value, &comment));
        }
    }
    if !found {
        after.push_str(&limit.line(limit.value, &comment));
    }
    Ok(after)
}

/// `pam_limits`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: PamLimitsParams = params(SPEC.name, args)?;
    let (use_max, use_min) = (flag(&p.use_max, false), flag(&p.use_min, false));
    if use_max && use_min {
        return Err(ModuleError::new(
            "Cannot use use_min and use_max at the same time.",
        ));
    }
    let file = p
        .dest
        .as_ref()
        .map_or("/etc/security/limits.conf", |d| d.as_str());
    let path = Path::new(file);
    let domain = p.domain.as_str().trim();
    let kind = match &p.limit_type {
        Choice::Known(k) => k.as_str().to_owned(),
        Choice::Deferred(t) => t.clone(),
    };
    let item = p.limit_item.as_str().trim();
    let value = p.value.as_str().trim();
    let fs = ctx.target.fs();
    let before = fs.read_text_opt(path)?.unwrap_or_default();
    let comment = p
        .comment
        .as_ref()
        .map(|c| c.to_string())
        .unwrap_or_default();
    let limit = Limit {
        domain,
        kind: &kind,
        item,
        value,
    };
    let after = set_limit(&before, &limit, comment, use_max, use_min)?;
    if after == before {
        return Ok(ModuleResult::changed(false));
    }
    if let Some(parent) = path.parent().filter(|_| !ctx.check) {
        fs.mkdir_all(parent, 0o755)?;
    }
    let how = Placement {
        bytes: after.as_bytes(),
        mode: &None,
        owner: &None,
        group: &None,
        force: true,
        validate: None,
        backup: flag(&p.backup, false),
    };
    place(ctx, path, &how)
}
