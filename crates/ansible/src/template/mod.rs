//! Templating with minijinja and Ansible's behaviour: lazy recursive variables with cycle
//! detection, strict undefined naming the variable, native types for `"{{ expr }}"`, and
//! deferred results for what only the build can know.

mod b64_filters;
mod backslashes;
mod chained_undefined;
mod combine_filter;
mod dict_filters;
mod environment;
mod error;
mod expression;
mod file_options;
mod file_tests;
pub mod filters;
mod hostvars;
mod human_filters;
mod jinja_tests;
mod literal;
mod lookup_command;
mod lookup_files;
mod lookup_lists;
mod lookup_plugins;
mod lookup_sequence;
mod lookup_state;
mod lookup_template;
mod lookup_url;
pub mod lookups;
mod math_filters;
pub mod now;
mod to_datetime;
pub use now::{days_from_civil, BUILD_TIME};
mod plugin_names;
mod plugin_variables;
mod printf;
mod project_paths;
mod pymethods;
mod pyrandom;
mod pyrepr;
mod python_filters;
mod python_plugins;
mod python_regex;
mod random_filters;
mod result_tests;
mod select_filters;
mod set_filters;
mod templar;
mod template_vars;
mod url_filters;
mod version_types;

pub use error::{Condition, TemplateError};
pub use expression::{contains_template, is_template, mark_unsafe, single_expression};
pub use file_options::{Delimiter, FileOptions};
pub use filters::{ansible_bool_str, OMIT};
pub use python_plugins::PythonPlugins;
pub use templar::Templar;
pub use template_vars::template_vars;
pub use version_types::compare_versions;

#[cfg(test)]
mod unit_tests;
