//! `patch` (`ansible.posix.patch`): a patch file of the role applied to files of the image with
//! `patch` in the rootfs.
//!
//! A role's patch file applied with the image's `patch`.

use serde::{Deserialize, Serialize};

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Flag, Text};
use crate::target::Cmd;
use serde_json::Value as Json;

/// Parameters of `patch`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PatchParams {
    /// The patch file (a role file).
    pub src: Text,
    /// The file to patch in the image.
    #[serde(alias = "originalfile")]
    pub dest: Option<Text>,
    /// The folder paths in the patch are relative to.
    pub basedir: Option<Text>,
    /// Leading path components to strip (`-p`).
    pub strip: Option<Text>,
    /// Accepted: the patch is always read from the role.
    pub remote_src: Option<Flag>,
    /// Ignore whitespace.
    pub ignore_whitespace: Option<Flag>,
    /// Accepted.
    pub backup: Option<Flag>,
    /// Accepted.
    pub binary: Option<Flag>,
}

impl Params for PatchParams {
    fn check(&self) -> Result<(), String> {
        if self.dest.is_none() && self.basedir.is_none() {
            return Err("patch needs dest or basedir".into());
        }
        Ok(())
    }
}

/// `patch`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "patch",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<PatchParams>,
    plan_time: PlanTime::PushPatch,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: false,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `patch`: applied unless it already is (a reverse dry run succeeds).
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: PatchParams = params(SPEC.name, args)?;
    let text = std::fs::read_to_string(ctx.local_path()?)
        .map_err(|e| ModuleError::new(format!("reading the patch {}: {e}", p.src.as_str())))?;
    let strip = p
        .strip
        .as_ref()
        .map_or("0", |s| s.as_str())
        .trim()
        .to_owned();
    let mut argv: Vec<String> = vec!["patch".into(), "--batch".into(), format!("-p{strip}")];
    if flag(&p.ignore_whitespace, false) {
        argv.push("--ignore-whitespace".into());
    }
    let cwd = p.basedir.as_ref().map(|b| b.as_str().to_owned());
    if let Some(dest) = &p.dest {
        argv.push(dest.as_str().to_owned());
    }
    let run = |extra: &[&str]| {
        let mut words = argv.clone();
        words.splice(1..1, extra.iter().map(|s| (*s).to_owned()));
        let mut cmd = Cmd::new(&words);
        cmd.stdin = Some(text.clone());
        cmd.cwd = cwd.clone();
        ctx.target.run(&cmd)
    };
    let applied = run(&["--reverse", "--dry-run", "--silent"])?;
    if applied.rc == 0 {
        return Ok(ModuleResult::changed(false));
    }
    let check = run(&["--forward", "--dry-run"])?;
    if check.rc != 0 {
        return Err(ModuleError::new(format!(
            "the patch {} does not apply: {}",
            p.src.as_str(),
            check.stdout.trim()
        )));
    }
    if !ctx.check {
        let out = run(&["--forward"])?;
        if out.rc != 0 {
            return Err(ModuleError::new(format!(
                "patch failed: {}",
                out.stdout.trim()
            )));
        }
    }
    Ok(ModuleResult::changed(true))
}
