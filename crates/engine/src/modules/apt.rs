//! `apt`: Debian packages in the rootfs, through its own apt-get.

use planner::modules::apt::{AptParams, AptState};
use planner::modules::types::{Choice, TextList};
use serde_json::Value as Json;

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::packages::{AptRequest, apt_run};

/// `apt`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: AptParams = params(planner::modules::apt::SPEC.name, args)?;
    let mut names: Vec<String> = p.name.map(|TextList(n)| n).unwrap_or_default();
    if let Some(deb) = &p.deb {
        names.push(deb.to_string());
    }
    let state = match p.state {
        Some(Choice::Known(s)) => s,
        Some(Choice::Deferred(t)) => {
            return Err(ModuleError::new(format!("state '{t}' was not resolved")))
        }
        None => AptState::Present,
    };
    let mut extra = Vec::new();
    if let Some(release) = &p.default_release {
        extra.extend(["-t".to_owned(), release.to_string()]);
    }
    if flag(&p.allow_downgrade, false) {
        extra.push("--allow-downgrades".into());
    }
    if flag(&p.allow_change_held_packages, false) {
        extra.push("--allow-change-held-packages".into());
    }
    apt_run(
        ctx,
        AptRequest {
            names,
            state,
            update_cache: flag(&p.update_cache, false),
            install_recommends: p.install_recommends.as_ref().map(|f| f.or(true)),
            purge: flag(&p.purge, false),
            autoremove: flag(&p.autoremove, false),
            extra: &extra,
        },
    )
}
