//! Plans Ansible-style image recipes and roles into fully resolved task lists.
//!
//! [`plan`] reads `images/<name>.yml`, its roles and `mirror.toml`, and returns a [`Plan`]: the
//! ordered tasks with every variable and URL resolved, each with its `path:line`. Planning is
//! pure (it reads the project's files and nothing else) and takes milliseconds.

pub mod build_only;
pub mod collections;
pub mod edit;
pub mod error;
mod expand;
mod extra_vars;
pub mod facts;
pub mod intent;
pub mod inventory;
mod inventory_vars;
mod lookups;
mod magic_vars;
pub mod matrix;
pub mod plan;
mod plan_redact;
mod planner;
pub mod recipe;
mod roles;
mod runtime_context;
pub mod source;
pub mod tags;
mod task;
mod task_context;
pub mod var_dir;

// The Ansible language lives in its own crate; its modules keep their paths here.
pub(crate) use ansible::free_form;
pub use ansible::{glob, pyjson, python, pyyaml, shlex, template, vars, vault, yaml};
// The modules live in their own crate, with what the engine runs of them; their paths here
// stay.
pub use ::modules;
pub use error::{ErrorKind, Location, PlanError};
pub use extra_vars::{parse_extra_vars, parse_extra_vars_with_vault};
pub use intent::ImageIntent;
pub use plan::{Plan, PlannedTask, Step};
pub use plan_redact::redact_plan;
pub use planner::{plan, recipe_facts, PlanOptions, RecipeFacts};
pub use recipe::Project;
pub use tags::TagFilter;
