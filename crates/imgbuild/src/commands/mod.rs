//! One module per command.

mod affected;
mod apply;
mod boot;
mod build;
mod cache;
mod config_cmd;
mod dispatch;
mod fan_out;
mod image_input;
mod lint;
mod list;
mod man_pages;
mod matrix;
mod mirror_cmd;
mod output;
mod plan;
mod sbom;
mod session;
mod site;
mod unprivileged;
mod verify;

pub use dispatch::run;
// `boot` (another owner's file) still names these as `super::…`; the other commands import
// them from `output`.
use output::{print_check, report_out};
