//! Plans Ansible-style image recipes and roles into fully resolved task lists.
pub mod error;
pub mod modules;
pub mod template;
pub mod vars;
pub mod yaml;
