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
mod free_form;
pub mod glob;
pub mod intent;
pub mod inventory;
mod inventory_vars;
mod lookups;
pub mod matrix;
pub mod modules;
pub mod plan;
mod planner;
pub mod pyjson;
pub mod pyyaml;
pub mod recipe;
mod roles;
mod runtime_context;
pub mod shlex;
pub mod source;
pub mod tags;
mod task;
pub mod template;
pub mod var_dir;
pub mod vars;
pub mod vault;
pub mod yaml;

pub use error::{ErrorKind, Location, PlanError};
pub use extra_vars::{parse_extra_vars, parse_extra_vars_with_vault};
pub use intent::ImageIntent;
pub use plan::{Plan, PlannedTask, Step};
pub use planner::{plan, recipe_facts, PlanOptions, RecipeFacts};
pub use recipe::Project;
pub use tags::TagFilter;
