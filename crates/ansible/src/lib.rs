//! The Ansible language, apart from what a play does: YAML as ansible-core reads it (vaulted
//! values and files, `!unsafe`, the relaxed forms), variables and the layers of their
//! precedence, Jinja2 templating with Ansible's filters, tests and lookups, Python's `json`,
//! `yaml` and `repr` output, globbing and `key=value` arguments. The planner decides what a play
//! means; this crate says what its text means.

pub mod free_form;
pub mod glob;
pub mod pyjson;
pub mod python;
pub mod pyyaml;
pub mod shlex;
pub mod template;
pub mod vars;
pub mod vault;
pub mod yaml;
