//! The executor's side of one initramfs per image (crate::initramfs): what each task's
//! packages deferred, a recipe's own build that makes them needless, and the one build at the
//! end of the last role for a recipe that relies on the hooks.

use std::time::Instant;

use planner::plan::PlannedTask;

use super::{Executor, RoleReport, TaskFailure};
use crate::costs::TaskCost;
use crate::events::Event;
use crate::initramfs::Seen;
use crate::target::Target;

/// The name the deferred build goes by in reports.
const FINAL_BUILD: &str = "the image's initramfs, built once for the packages' hooks";

impl Executor<'_> {
    /// The initramfs builds deferred and not yet done (kept with a cached layer).
    pub fn initramfs_pending(&self) -> Vec<String> {
        self.initramfs.pending().to_vec()
    }

    /// Takes back what a cached layer left deferred.
    pub fn restore_initramfs_pending(&mut self, pending: Vec<String>) {
        self.initramfs.restore(pending);
    }

    /// After `task`: the builds its packages' hooks asked for are deferred, or it built the
    /// initramfs itself, which makes the deferred ones needless.
    pub(super) fn initramfs_after_task(&mut self, task: &PlannedTask, target: &dyn Target) {
        let message = match self.initramfs.after_task(target.fs()) {
            Seen::Nothing => return,
            Seen::Deferred(requests) => format!(
                "{}: initramfs deferred ({}): the image's is built once, after its packages",
                task.source,
                requests.join("; ")
            ),
            Seen::Built(requests) => format!(
                "{}: built the image's initramfs; {} deferred build(s) not needed",
                task.source,
                requests.len()
            ),
        };
        self.reporter.event(&Event::Note { message });
    }

    /// At the start of `role`, on `target`.
    pub(super) fn initramfs_begin_role(&mut self, target: &dyn Target) {
        self.initramfs.begin_role(target.fs());
    }

    /// At the end of the plan's last role: the initramfs the deferred requests asked for, built
    /// once by the image's kernel hooks.
    pub(super) fn initramfs_at_end(
        &mut self,
        role: &str,
        target: &dyn Target,
        report: &mut RoleReport,
    ) -> Result<(), Box<TaskFailure>> {
        if self.plan.roles.last().map(String::as_str) != Some(role) || self.options.check {
            return Ok(());
        }
        let started = Instant::now();
        let Some(built) = self.initramfs.finish(target) else {
            return Ok(());
        };
        match built {
            Ok(what) => {
                self.reporter.event(&Event::Note {
                    message: format!("{role}: {FINAL_BUILD}: {what}"),
                });
                report.costs.push(TaskCost {
                    task: FINAL_BUILD.to_owned(),
                    source: role.to_owned(),
                    seconds: started.elapsed().as_secs_f64(),
                    packages: None,
                });
                Ok(())
            }
            Err(msg) => Err(Box::new(TaskFailure {
                role: role.to_owned(),
                task: FINAL_BUILD.to_owned(),
                source_line: role.to_owned(),
                module: "initramfs".to_owned(),
                command: None,
                rc: None,
                msg,
                output_tail: Vec::new(),
            })),
        }
    }
}
