//! The plan: every task of an image in order, with its variables and URLs resolved.

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value as Json;

use crate::modules::spec::Downloads;

/// A planned image.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The image name.
    pub image: String,
    /// The recipe file, relative to the project root.
    pub recipe: String,
    /// What the image is meant to hold (kernel, MOFED, NVIDIA, initramfs), read once.
    pub intent: crate::intent::ImageIntent,
    /// Facts known at plan time (`ansible_*`).
    pub facts: IndexMap<String, Json>,
    /// The recipe's variables (with `mirror_server` and `-e`), resolved.
    pub vars: IndexMap<String, Json>,
    /// The recipe's roles in order; each becomes one layer.
    pub roles: Vec<String>,
    /// The tasks in order.
    pub tasks: Vec<Step>,
    /// Handlers, run when notified (at the end of the notifying role).
    pub handlers: Vec<Step>,
    /// Things that work but that a person should look at.
    pub warnings: Vec<Warning>,
    /// Every project file the plan read, relative to the root.
    pub inputs: Vec<String>,
    /// Names a `notify` gives that no handler has: a task that changes and notifies one fails
    /// the build, as under ansible-playbook (a task that does not change never looks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_handlers: Vec<String>,
}

/// A task, or a block with `rescue`/`always` (blocks without them are flattened).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Step {
    /// One task.
    Task(Box<PlannedTask>),
    /// A block whose `rescue` or `always` must stay together with it.
    Block(Box<PlannedBlock>),
}

/// One task, resolved.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PlannedTask {
    /// The recipe role (layer) it belongs to.
    pub role: String,
    /// Its name (rendered).
    pub name: String,
    /// The module's short name.
    pub module: String,
    /// The module's arguments, canonical and resolved; see `deferred`.
    pub args: Json,
    /// Its tags, inherited ones included.
    pub tags: Vec<String>,
    /// Null, or the condition that only the build can decide.
    pub when: Option<String>,
    /// `path:line` of the task.
    pub source: String,
    /// `delegate_to:` names the image itself: the task runs there as any other, and a module
    /// with a path on each of two hosts (`synchronize`) finds both in the image.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub delegated_to_image: bool,
    /// `delegate_to` names the controller: the task works in the build's controller folder (a
    /// scratch folder of the build, where roles download and unpack before copying into the
    /// image).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub on_controller: bool,
    /// `check_mode:` of the task (or its blocks): true runs it in check mode, false for real,
    /// whatever the build's mode; none follows the build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_mode: Option<bool>,
    /// `diff:` of the task (or its blocks), as `check_mode` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<bool>,
    /// The user other than root the task runs as (`become` with `become_user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub become_user: Option<String>,
    /// `become_user` is a template only the build can render (`"{{ item }}"` over a
    /// registered list): rendered for each item as the task runs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub become_user_at_build: bool,
    /// Argument names whose values are still templates (they use build-time results).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deferred: Vec<String>,
    /// The loop variable's value, for one iteration of a loop known at plan time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<LoopItem>,
    /// A loop the build resolves (its expression).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loop_over: Option<Json>,
    /// The loop variable of a loop the build resolves (`item` unless `loop_control.loop_var`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loop_var: Option<String>,
    /// `loop_control.index_var` of a loop the build resolves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loop_index_var: Option<String>,
    /// `loop_control.extended` of a loop the build resolves.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub loop_extended: bool,
    /// `loop_control.pause`: seconds the build waits before each item but the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_pause: Option<f64>,
    /// `register:`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub register: Option<String>,
    /// Delegated to a host the build cannot reach, with `ignore_unreachable`: the build
    /// registers the task unreachable (`unreachable: true`, this message) and goes on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<String>,
    /// `async` with `poll: 0`: the task registers a started job (`ansible_job_id`, `finished:
    /// 0`) and its result is what `async_status` reports (it has run to its end by then).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// `notify:`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notify: Vec<String>,
    /// `listen:` (handlers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub listen: Vec<String>,
    /// `ignore_errors:` (true, or a deferred expression).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignore_errors: Option<Json>,
    /// `changed_when:` as one expression.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_when: Option<String>,
    /// `failed_when:` as one expression.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_when: Option<String>,
    /// `until:` with `retries` and `delay`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<Retry>,
    /// `environment:`, resolved.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub environment: IndexMap<String, Json>,
    /// `no_log:`: hide arguments and output.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_log: bool,
    /// The project file the task reads (template, copy or script source).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_file: Option<String>,
    /// Where the build looks for a template, copy or script source whose name only the build
    /// knows (a deferred `src`), in order; each folder is an input of the image.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub local_search: Vec<String>,
    /// A template's rendered text, when it could be rendered at plan time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rendered: Option<String>,
    /// Plan-time values of the variables that the task's build-time expressions use
    /// (`when`, `changed_when`, deferred arguments, ...), so the build can evaluate them.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub context: IndexMap<String, Json>,
    /// Why the task fails when it runs: an error Ansible meets only then (a template that does
    /// not render, arguments its module refuses), left to the build because the failure is
    /// caught or the task may not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fails: Option<String>,
    /// `include_vars`: the var files the plan read, in order (project paths).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub var_files: Vec<String>,
}

/// One iteration of a loop.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoopItem {
    /// `item`, or `loop_control.loop_var`.
    pub var: String,
    /// The value.
    pub value: Json,
    /// 0-based index.
    pub index: usize,
    /// Iterations in the loop.
    pub length: usize,
    /// `loop_control.index_var`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_var: Option<String>,
    /// `loop_control.label`, rendered for this item.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `ansible_loop`, with `loop_control.extended`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extended: Option<Json>,
    /// Its `when` is false at plan time: kept only so that `register` sees every item.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
    /// The item came from a lookup (`with_<lookup>`), which Ansible marks unsafe: a fact set
    /// from it is never templated again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_lookup: bool,
}

/// The variables Ansible sets in one iteration of a loop: the loop variable, `ansible_loop_var`,
/// the index variable, and with `extended` the `ansible_loop` mapping.
pub fn loop_vars(
    var: &str,
    index_var: Option<&str>,
    items: &[Json],
    index: usize,
    extended: bool,
) -> Vec<(String, Json)> {
    let mut vars = vec![
        (
            var.to_owned(),
            items.get(index).cloned().unwrap_or(Json::Null),
        ),
        ("ansible_loop_var".to_owned(), Json::from(var)),
    ];
    if let Some(index_var) = index_var {
        vars.push((index_var.to_owned(), Json::from(index)));
        vars.push(("ansible_index_var".to_owned(), Json::from(index_var)));
    }
    if extended {
        vars.push(("ansible_loop".to_owned(), extended_loop(items, index)));
    }
    vars
}

/// `ansible_loop` for iteration `index` of `items`.
pub fn extended_loop(items: &[Json], index: usize) -> Json {
    let length = items.len();
    let mut map = serde_json::Map::new();
    map.insert("allitems".into(), Json::Array(items.to_vec()));
    map.insert("index".into(), Json::from(index + 1));
    map.insert("index0".into(), Json::from(index));
    map.insert("revindex".into(), Json::from(length - index));
    map.insert("revindex0".into(), Json::from(length - index - 1));
    map.insert("first".into(), Json::Bool(index == 0));
    map.insert("last".into(), Json::Bool(index + 1 == length));
    map.insert("length".into(), Json::from(length));
    if index > 0 {
        map.insert("previtem".into(), items[index - 1].clone());
    }
    if index + 1 < length {
        map.insert("nextitem".into(), items[index + 1].clone());
    }
    Json::Object(map)
}

/// `until` with its retry settings.
#[derive(Debug, Clone, Serialize)]
pub struct Retry {
    /// The condition.
    pub until: String,
    /// Attempts after the first (default 3).
    pub retries: Json,
    /// Seconds between attempts (default 5).
    pub delay: Json,
}

/// A block with `rescue` or `always`.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedBlock {
    /// The recipe role (layer) it belongs to.
    pub role: String,
    /// Its name.
    pub name: String,
    /// Null, or the condition that only the build can decide.
    pub when: Option<String>,
    /// `path:line` of the block.
    pub source: String,
    /// The tasks.
    pub block: Vec<Step>,
    /// Run when a block task fails.
    pub rescue: Vec<Step>,
    /// Run in any case.
    pub always: Vec<Step>,
}

/// Something planned that works but deserves a look.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Warning {
    /// `path:line`.
    pub source: String,
    /// What and why.
    pub message: String,
}

impl Step {
    /// Every task of this step in order, blocks included.
    pub fn tasks(&self) -> Vec<&PlannedTask> {
        match self {
            Step::Task(task) => vec![task],
            Step::Block(block) => block
                .block
                .iter()
                .chain(&block.rescue)
                .chain(&block.always)
                .flat_map(Step::tasks)
                .collect(),
        }
    }
}

impl Step {
    /// Every task of this step in order, blocks included, to change.
    pub fn tasks_mut(&mut self) -> Vec<&mut PlannedTask> {
        match self {
            Step::Task(task) => vec![task],
            Step::Block(block) => {
                let PlannedBlock {
                    block,
                    rescue,
                    always,
                    ..
                } = &mut **block;
                block
                    .iter_mut()
                    .chain(rescue.iter_mut())
                    .chain(always.iter_mut())
                    .flat_map(Step::tasks_mut)
                    .collect()
            }
        }
    }
}

impl Plan {
    /// Every task of the plan in order, flattening blocks.
    pub fn all_tasks(&self) -> Vec<&PlannedTask> {
        self.tasks.iter().flat_map(Step::tasks).collect()
    }

    /// Every URL the plan downloads that is known at plan time, with the task that does, in
    /// order, each URL once.
    pub fn downloads(&self) -> Vec<(String, &PlannedTask)> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for task in self
            .all_tasks()
            .into_iter()
            .chain(self.handlers.iter().flat_map(Step::tasks))
        {
            for url in task.download_urls() {
                if seen.insert(url.clone()) {
                    out.push((url, task));
                }
            }
        }
        out
    }
}

impl PlannedTask {
    /// What this task's module downloads (its spec's `downloads`).
    fn downloads(&self) -> Downloads {
        crate::modules::lookup(&self.module).map_or(Downloads::Nothing, |spec| spec.downloads)
    }

    /// The http(s) URLs this task downloads, as far as the plan knows them.
    pub fn download_urls(&self) -> Vec<String> {
        let mut urls = Vec::new();
        let mut push = |v: &Json| {
            if let Some(s) = v
                .as_str()
                .filter(|s| s.starts_with("http://") || s.starts_with("https://"))
            {
                urls.push(s.to_owned());
            }
        };
        match self.downloads() {
            Downloads::Url(arg) | Downloads::RemoteSource(arg) => {
                self.args.get(arg).into_iter().for_each(&mut push)
            }
            Downloads::PackageNames => match self.args.get("name") {
                Some(Json::Array(items)) => items.iter().for_each(&mut push),
                Some(other) => push(other),
                None => {}
            },
            Downloads::Nothing => {}
        }
        urls
    }

    /// Whether this task downloads from a URL that only the build will know (a template over
    /// registered results, or a loop the build resolves).
    pub fn downloads_unknown_url(&self) -> bool {
        let (arg, remote) = match self.downloads() {
            Downloads::Url(arg) => (arg, true),
            Downloads::RemoteSource(arg) => {
                let remote = self
                    .args
                    .get(arg)
                    .and_then(Json::as_str)
                    .is_some_and(|s| s.contains("://"))
                    || self.args.get("remote_src") == Some(&Json::Bool(true));
                (arg, remote)
            }
            Downloads::PackageNames | Downloads::Nothing => return false,
        };
        let templated = self.deferred.iter().any(|d| d == arg) || self.loop_over.is_some();
        templated && remote
    }
}
