//! The executor's state and what it reports: its options, a role's report, a failed task,
//! and what `meta` ended. Every part of the executor shares these types.

use std::path::Path;
use std::sync::Arc;

use planner::template::Templar;
use planner::vars::Layer;
use planner::Plan;
use serde_json::{Map, Value as Json};

use super::controller_folder;
use crate::events::{Reporter, Status};
use crate::modules::Downloader;

/// Check and diff mode.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExecOptions {
    /// Report what would change, change nothing.
    pub check: bool,
    /// Show before/after of changed files.
    pub diff: bool,
}

/// A task that failed the build, with what a person needs to fix it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{role} › {task} ({source_line}): {msg}")]
pub struct TaskFailure {
    /// The role.
    pub role: String,
    /// The task's name.
    pub task: String,
    /// `path:line` of the task.
    pub source_line: String,
    /// The module.
    pub module: String,
    /// The command it ran, if it ran one.
    pub command: Option<String>,
    /// The exit code, if a command ran.
    pub rc: Option<i64>,
    /// What went wrong.
    pub msg: String,
    /// The last lines of the command's output.
    pub output_tail: Vec<String>,
}

/// What a role did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoleReport {
    /// Tasks run (loop items count once per item).
    pub tasks: usize,
    /// Tasks that changed something.
    pub changed: usize,
    /// What each task that ran cost, in order.
    pub costs: Vec<crate::costs::TaskCost>,
}

/// Runs the tasks of a plan, role by role.
pub struct Executor<'a> {
    pub(super) plan: &'a Plan,
    pub(super) templar: Templar,
    pub(super) base: Arc<Layer>,
    pub(super) facts_set: Arc<Layer>,
    pub(super) reporter: &'a dyn Reporter,
    pub(super) options: ExecOptions,
    pub(super) project_root: &'a Path,
    pub(super) downloads: &'a dyn Downloader,
    pub(super) pkg_mgr: String,
    pub(super) notified: Vec<String>,
    /// The results so far of the loop the plan unrolled that is running (its task's source).
    pub(super) loop_results: (String, Vec<Json>),
    /// `meta: end_role` or `end_play` ended the rest.
    pub(super) ending: Option<Ending>,
    /// The image's facts ([`image_facts`]) are in `base`.
    pub(super) image_facts_gathered: bool,
    /// The hosts and groups, once a `group_by` or `add_host` changes them.
    pub(super) inventory: Option<planner::inventory::Inventory>,
    /// What tasks delegated to `localhost` work in, once one runs.
    pub(super) controller: Option<controller_folder::ControllerFolder>,
    /// The initramfs builds packages' hooks asked for, deferred (crate::initramfs).
    pub(super) initramfs: crate::initramfs::Deferred,
}

pub(super) struct Run {
    pub(super) status: Status,
    pub(super) result: Map<String, Json>,
    pub(super) failure: Option<TaskFailure>,
    pub(super) msg: Option<String>,
}

/// What `meta` ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The rest of the role.
    Role,
    /// Everything after.
    Play,
}
