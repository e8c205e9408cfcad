//! `alternatives` (`community.general.alternatives`): the image's alternatives system, by its
//! own `update-alternatives` (Debian and Ubuntu; `alternatives` on EL is the same program), as
//! the module drives it: install the alternative, select it, or set the group back to auto.
//!
//! The image's alternatives system through its own `update-alternatives`,
//! as community.general's module drives it: `--display` read first, then `--install` when the
//! alternative is missing or differs, `--set` to select it, `--auto` to give the choice back,
//! `--remove` for `absent`.

use serde::{Deserialize, Serialize};

use super::api::{params, ModuleCtx, ModuleError, ModuleResult};
use super::required;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Int, Text};
use crate::target::Cmd;
use regex::Regex;
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;
use std::path::Path;

crate::choices!(
    /// What the alternative becomes.
    AlternativeState {
        Present => "present",
        Selected => "selected",
        Auto => "auto",
        Absent => "absent",
    }
);

/// A link that follows the alternative (`update-alternatives --slave`).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Subcommand {
    /// The follower's name in the group (`keytool`).
    pub name: Text,
    /// Its target (`/usr/lib/jvm/.../bin/keytool`).
    pub path: Text,
    /// Its generic link (`/usr/bin/keytool`).
    pub link: Text,
}

/// Parameters of `alternatives`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AlternativesParams {
    /// The group (`java`, `python3`, `mpi`).
    pub name: Text,
    /// The alternative's target, which must exist in the image.
    pub path: Text,
    /// The generic link (`/usr/bin/java`); needed only to install a group the image lacks.
    pub link: Option<Text>,
    /// The alternative's priority (50, or the one it has, unless given).
    pub priority: Option<Int>,
    /// `selected` (the default), `present`, `auto` or `absent`.
    pub state: Option<Choice<AlternativeState>>,
    /// Links that follow the alternative.
    #[serde(alias = "slaves")]
    pub subcommands: Option<Vec<Subcommand>>,
}

impl Params for AlternativesParams {}

/// `alternatives`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "alternatives",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<AlternativesParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

const UPDATE_ALTERNATIVES: &str = "update-alternatives";

/// An alternative of the group as `--display` shows it.
#[derive(Debug, Clone, PartialEq)]
struct Installed {
    priority: i64,
    subcommands: Vec<Json>,
}

/// The group as `update-alternatives --display` shows it.
#[derive(Debug, Default, PartialEq)]
struct Group {
    /// `auto` or `manual`; `None` when the group does not exist.
    mode: Option<String>,
    path: Option<String>,
    link: Option<String>,
    alternatives: BTreeMap<String, Installed>,
}

/// What the task asked, with the group's current values filled in as the module fills them.
struct Wanted<'p> {
    name: &'p str,
    path: &'p str,
    link: Option<String>,
    priority: i64,
    subcommands: Option<Vec<Json>>,
}

/// `alternatives`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: AlternativesParams = params(SPEC.name, args)?;
    let state = match &p.state {
        None => AlternativeState::Selected,
        Some(Choice::Known(state)) => *state,
        Some(Choice::Deferred(text)) => {
            return Err(ModuleError::new(format!("state '{text}' was not rendered")))
        }
    };
    let name = p.name.as_str();
    let display = Cmd::new(&[UPDATE_ALTERNATIVES, "--display", name]).env("LC_ALL", "C");
    let out = required::run(ctx, &display)?;
    let group = if out.rc == 0 {
        parse(&out.stdout, p.subcommands.as_deref())
    } else {
        Group::default()
    };
    let wanted = wanted(&p, &group)?;
    let mut outcome = Outcome::new(&group, &wanted, ctx.diff);
    if state == AlternativeState::Absent {
        if group.alternatives.contains_key(wanted.path) {
            outcome.act(ctx, &["--remove", name, wanted.path], "Remove alternative")?;
            outcome.after = json!({"state": "absent"});
        }
        return Ok(outcome.result());
    }
    if needs_install(&p, &group, &wanted) {
        install(ctx, &wanted, &mut outcome)?;
    }
    if state == AlternativeState::Selected && group.path.as_deref() != Some(wanted.path) {
        outcome.act(ctx, &["--set", name, wanted.path], "Set alternative")?;
        set_after_state(&mut outcome.after, "selected");
    }
    if state == AlternativeState::Auto && group.mode.as_deref() == Some("manual") {
        outcome.act(ctx, &["--auto", name], "")?;
        set_after_state(&mut outcome.after, "present");
    }
    Ok(outcome.result())
}

/// The task's values, the group's where the task gives none (link, priority, subcommands).
fn wanted<'p>(p: &'p AlternativesParams, group: &Group) -> Result<Wanted<'p>, ModuleError> {
    let path = p.path.as_str();
    let current = group.alternatives.get(path);
    let priority = match &p.priority {
        Some(crate::types::Int::Known(n)) => *n,
        Some(crate::types::Int::Deferred(text)) => {
            return Err(ModuleError::new(format!(
                "priority '{text}' was not rendered"
            )))
        }
        None => current.map_or(50, |c| c.priority),
    };
    let subcommands = match &p.subcommands {
        Some(given) => Some(given.iter().map(subcommand_json).collect()),
        None => current
            .filter(|c| !c.subcommands.is_empty())
            .map(|c| c.subcommands.clone()),
    };
    Ok(Wanted {
        name: p.name.as_str(),
        path,
        link: p
            .link
            .as_ref()
            .map(|l| l.as_str().to_owned())
            .or_else(|| group.link.clone()),
        priority,
        subcommands,
    })
}

/// Whether the alternative must be (re)installed: missing, another priority, other
/// subcommands.
fn needs_install(p: &AlternativesParams, group: &Group, wanted: &Wanted) -> bool {
    let Some(current) = group.alternatives.get(wanted.path) else {
        return true;
    };
    let priority_differs = p.priority.is_some() && current.priority != wanted.priority;
    let subcommands_differ = p.subcommands.as_ref().is_some_and(|_| {
        let given = wanted.subcommands.as_deref().unwrap_or_default();
        !current.subcommands.iter().all(|s| given.contains(s))
            || !given.iter().all(|s| current.subcommands.contains(s))
    });
    priority_differs || subcommands_differ
}

/// `update-alternatives --install`, with a `--slave` per subcommand.
fn install(ctx: &ModuleCtx, wanted: &Wanted, outcome: &mut Outcome) -> Result<(), ModuleError> {
    if !ctx.target.fs().exists(Path::new(wanted.path))? {
        return Err(ModuleError::new(format!(
            "Specified path {} does not exist",
            wanted.path
        )));
    }
    let Some(link) = &wanted.link else {
        return Err(ModuleError::new(
            "Needed to install the alternative, but unable to do so as we are missing the link",
        ));
    };
    let priority = wanted.priority.to_string();
    let mut argv = vec![
        "--install",
        link.as_str(),
        wanted.name,
        wanted.path,
        &priority,
    ];
    for sub in wanted.subcommands.iter().flatten() {
        let field = |key: &str| sub.get(key).and_then(Json::as_str).unwrap_or_default();
        argv.extend(["--slave", field("link"), field("name"), field("path")]);
    }
    outcome.act(ctx, &argv, "Install alternative")?;
    let mut after = json!({
        "state": "present", "path": wanted.path, "priority": wanted.priority, "link": link,
    });
    if let Some(subcommands) = &wanted.subcommands {
        after["subcommands"] = Json::Array(subcommands.clone());
    }
    outcome.after = after;
    Ok(())
}

/// A subcommand as the module reports it.
fn subcommand_json(sub: &Subcommand) -> Json {
    json!({"name": sub.name.as_str(), "path": sub.path.as_str(), "link": sub.link.as_str()})
}

/// Sets `state` in a diff's `after`, which may still be empty.
fn set_after_state(after: &mut Json, state: &str) {
    if !after.is_object() {
        *after = Json::Object(Map::new());
    }
    after["state"] = json!(state);
}

/// What the task did: its changes, messages and diff.
struct Outcome {
    /// The task asked for the diff (`--diff`, `diff: true`): before and after are reported.
    diff: bool,
    changed: bool,
    messages: Vec<String>,
    before: Json,
    after: Json,
}

impl Outcome {
    /// Nothing done yet; `before` describes the alternative as the group has it.
    fn new(group: &Group, wanted: &Wanted, diff: bool) -> Self {
        let before = match group.alternatives.get(wanted.path) {
            None if group.mode.is_none() => json!({}),
            None => json!({"state": "absent"}),
            Some(current) => {
                let mut before = json!({
                    "state": "present", "path": wanted.path,
                    "priority": current.priority, "link": group.link,
                });
                if !current.subcommands.is_empty() {
                    before["subcommands"] = Json::Array(current.subcommands.clone());
                }
                if group.mode.as_deref() == Some("manual")
                    && group.path.as_deref() != Some(wanted.path)
                {
                    before["state"] = json!("selected");
                }
                before
            }
        };
        Outcome {
            diff,
            changed: false,
            messages: Vec::new(),
            before,
            after: json!({}),
        }
    }

    /// Runs `update-alternatives ARGS` (unless in check mode) and records the change.
    fn act(&mut self, ctx: &ModuleCtx, args: &[&str], what: &str) -> Result<(), ModuleError> {
        self.changed = true;
        let name = args.get(1).copied().unwrap_or_default();
        self.messages.push(match (what, args.first().copied()) {
            ("", _) => format!("Set alternative to auto for '{name}'."),
            (_, Some("--install")) => {
                format!("{what} '{}' for '{}'.", args[3], args[2])
            }
            (_, Some("--remove")) => format!("{what} '{}' from '{name}'.", args[2]),
            _ => format!("{what} '{}' for '{name}'.", args.get(2).unwrap_or(&"")),
        });
        if ctx.check {
            return Ok(());
        }
        let mut argv = vec![UPDATE_ALTERNATIVES];
        argv.extend_from_slice(args);
        let out = required::run(ctx, &Cmd::new(&argv).env("LC_ALL", "C"))?;
        if out.rc != 0 {
            return Err(ModuleError::new(format!(
                "{}: {}",
                argv.join(" "),
                out.stderr.trim()
            )));
        }
        Ok(())
    }

    /// The module's answer.
    fn result(self) -> ModuleResult {
        let (before, after) = match self.diff {
            true => (self.before, self.after),
            false => (json!({}), json!({})),
        };
        ModuleResult::changed(self.changed)
            .with("msg", self.messages.join(" "))
            .with("diff", json!({"before": before, "after": after}))
    }
}

/// Reads `update-alternatives --display` as the module's regular expressions read it.
fn parse(display: &str, given: Option<&[Subcommand]>) -> Group {
    let regex = |pattern: &str| Regex::new(pattern).expect("a fixed pattern");
    let mode = regex(r"(?m)\s-\s(?:status\sis\s)?(\w*)(?:\smode|.)$");
    let Some(mode) = mode.captures(display).map(|c| c[1].to_owned()) else {
        return Group::default();
    };
    let first = |pattern: &str| regex(pattern).captures(display).map(|c| c[1].to_owned());
    let path = first(r"(?m)^\s*link currently points to (.*)$");
    let link = first(r"(?m)^\s*link \w+ is (.*)$");
    let mut links: BTreeMap<String, String> = regex(r"(?m)^\s*(?:slave|follower) (\S+) is (.*)$")
        .captures_iter(display)
        .map(|c| (c[1].to_owned(), c[2].to_owned()))
        .collect();
    if links.is_empty() {
        for sub in given.unwrap_or_default() {
            links.insert(sub.name.as_str().to_owned(), sub.link.as_str().to_owned());
        }
    }
    let follower = regex(r"(?m)^\s+(?:slave|follower) (.*): (.*)$");
    let alternative =
        regex(r"(?m)^(/.*)\s-\s(?:family\s\S+\s)?priority\s(\d+)((?:\s+(?:slave|follower).*)*)");
    let alternatives = alternative
        .captures_iter(display)
        .map(|c| {
            let subcommands = follower
                .captures_iter(&c[3])
                .filter(|s| &s[2] != "(null)")
                .map(|s| json!({"name": &s[1], "path": &s[2], "link": links.get(&s[1])}))
                .collect();
            let priority = c[2].parse().unwrap_or(0);
            (
                c[1].to_owned(),
                Installed {
                    priority,
                    subcommands,
                },
            )
        })
        .collect();
    Group {
        mode: Some(mode),
        path,
        link,
        alternatives,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `update-alternatives --display editor` of Debian 12.
    const EDITOR: &str = "editor - manual mode
  link best version is /bin/nano
  link currently points to /usr/bin/vim.basic
  link editor is /usr/bin/editor
  slave editor.1.gz is /usr/share/man/man1/editor.1.gz
/bin/nano - priority 40
  slave editor.1.gz: /usr/share/man/man1/nano.1.gz
/usr/bin/vim.basic - priority 30
  slave editor.1.gz: /usr/share/man/man1/vim.1.gz
";

    #[test]
    fn reads_the_group_as_the_module_does() {
        let group = parse(EDITOR, None);
        assert_eq!(group.mode.as_deref(), Some("manual"));
        assert_eq!(group.path.as_deref(), Some("/usr/bin/vim.basic"));
        assert_eq!(group.link.as_deref(), Some("/usr/bin/editor"));
        assert_eq!(group.alternatives["/bin/nano"].priority, 40);
        assert_eq!(
            group.alternatives["/usr/bin/vim.basic"].subcommands,
            vec![
                json!({"name": "editor.1.gz", "path": "/usr/share/man/man1/vim.1.gz",
                "link": "/usr/share/man/man1/editor.1.gz"})
            ]
        );
    }

    #[test]
    fn a_group_the_image_lacks_reads_as_empty() {
        assert_eq!(
            parse("update-alternatives: error: no alternatives for x\n", None),
            Group::default()
        );
    }
}

#[cfg(test)]
mod spec_tests {
    use serde_json::json;

    use super::SPEC;

    #[test]
    fn takes_ansibles_options_and_defaults_nothing() {
        let args = json!({"name": "mpi", "path": "/usr/bin/mpicc.openmpi", "slaves": [
            {"name": "mpic++", "path": "/usr/bin/mpic++.openmpi", "link": "/usr/bin/mpic++"}
        ], "priority": "40"});
        let out = (SPEC.normalize)(args).expect("valid");
        assert_eq!(out["subcommands"][0]["name"], json!("mpic++"));
        assert_eq!(out["priority"], json!(40));
        assert!(out.get("state").is_none());
    }

    #[test]
    fn refuses_an_unknown_state_and_a_missing_path() {
        let err = (SPEC.normalize)(json!({"name": "java", "path": "/x", "state": "on"}))
            .expect_err("bad state");
        assert!(err.contains("selected"), "{err}");
        let err = (SPEC.normalize)(json!({"name": "java"})).expect_err("no path");
        assert_eq!(err, "missing required arguments: path");
    }
}
