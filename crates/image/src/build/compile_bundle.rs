//! A role's compile cache entries through the registry cache: taken before the role runs,
//! shared after it (see `cache::compile_share`).

use engine::compile_cache::CompileLog;
use engine::events::Event;
use planner::plan::Step;

use super::error::{io, BuildError};
use super::keys::role_of;
use super::role_layer::Roles;
use crate::cache::compile_share;
use crate::cache::remote::Record;

impl Roles<'_> {
    /// Before `role` runs: the compile entries the registry keeps for it (`--cache-from`) join
    /// the local compile cache. Says how many; a bundle that cannot be used is a warning.
    /// Returns whether a bundle was taken.
    pub(super) fn take_compiles(&self, role: &str) -> Result<bool, BuildError> {
        let Some(local) = self.settings.compile_cache() else {
            return Ok(false);
        };
        if !self.settings.remote.reads() {
            return Ok(false);
        }
        let work = self
            .stores
            .cache
            .work_dir()
            .map_err(io("creating a work folder for the compile bundle"))?;
        let tree = work.path().join("compiles");
        let tag = compile_share::bundle_tag(&self.plan.image, role);
        let what = format!("the compiles of role {role}");
        let taken = self.registry_cache().take(
            &what,
            &tag,
            &self.stores.blobs,
            &tree,
            engine::archive::Whiteouts::Keep,
        );
        if taken.is_none() {
            return Ok(false);
        }
        match compile_share::adopt(&tree, &local.dir) {
            Ok(added) => self.reporter.event(&Event::Note {
                message: format!(
                    "role {role}: {added} compile cache entries taken from the registry cache"
                ),
            }),
            Err(e) => self.reporter.event(&Event::Note {
                message: format!("warning: registry cache: {what} not taken: {e}"),
            }),
        }
        Ok(true)
    }

    /// After `role` ran: the entries its compiles used or made, shared through `--cache-to` as
    /// the role's bundle, unless they all came from the bundle `taken` from the registry, or
    /// what the role registers may hold what `no_log` hides.
    pub(super) fn share_compiles(&self, role: &str, steps: &[Step], log: &CompileLog, taken: bool) {
        let Some(local) = self.settings.compile_cache() else {
            return;
        };
        let handlers = self.plan.handlers.iter().filter(|h| role_of(h) == role);
        let hides = steps
            .iter()
            .chain(handlers)
            .flat_map(Step::tasks)
            .any(|t| t.no_log);
        let writes = self.settings.remote.writes();
        let nothing_new = taken && log.stats.misses == 0;
        if !writes || hides || self.secret_seen || nothing_new || log.keys.is_empty() {
            return;
        }
        let what = format!("the compiles of role {role}");
        let Ok(work) = self.stores.cache.work_dir() else {
            return;
        };
        let blob =
            match compile_share::bundle(&local.dir, &log.keys, work.path(), &self.stores.blobs) {
                Ok(Some(blob)) => blob,
                Ok(None) => return,
                Err(e) => {
                    self.reporter.event(&Event::Note {
                        message: format!("warning: registry cache: {what} not shared: {e}"),
                    });
                    return;
                }
            };
        let record = Record {
            tag: compile_share::bundle_tag(&self.plan.image, role),
            blob,
            created_by: format!("imgbuild compile cache entries of role {role}"),
            role: None,
        };
        self.registry_cache()
            .replace(&what, &record, &self.stores.blobs);
    }
}
