//! The options each module takes in ansible-core 2.14, with their aliases: the module's
//! argument spec, and its documentation where an action plugin takes options the module file
//! does not declare. Listed from Debian 12's ansible-core 2.14 (`ansible-doc -j` and the
//! modules' `argument_spec`); an option here that imgbuild does not implement is refused as
//! "not supported yet", never as an unknown field.

/// `(module, options and aliases)`, by imgbuild's module name.
#[rustfmt::skip]
pub const ANSIBLE_2_14: &[(&str, &[&str])] = &[
    ("add_host", &[
        "group", "groupname", "groups", "host", "hostname", "name",
    ]),
    ("alternatives", &[
        "link", "name", "path", "priority", "slaves", "state", "subcommands",
    ]),
    ("apt", &[
        "allow-downgrade", "allow-downgrades", "allow-unauthenticated",
        "allow_change_held_packages", "allow_downgrade", "allow_downgrades",
        "allow_unauthenticated", "autoclean", "autoremove", "cache_valid_time", "clean", "deb",
        "default-release", "default_release", "dpkg_options", "fail_on_autoremove", "force",
        "force_apt_get", "install-recommends", "install_recommends", "lock_timeout", "name",
        "only_upgrade", "package", "pkg", "policy_rc_d", "purge", "state", "update-cache",
        "update_cache", "update_cache_retries", "update_cache_retry_max_delay", "upgrade",
    ]),
    ("apt_key", &[
        "data", "file", "id", "keyring", "keyserver", "state", "url", "validate_certs",
    ]),
    ("apt_repository", &[
        "codename", "filename", "install_python_apt", "mode", "repo", "state", "update-cache",
        "update_cache", "update_cache_retries", "update_cache_retry_max_delay", "validate_certs",
    ]),
    ("assemble", &[
        "attr", "attributes", "backup", "decrypt", "delimiter", "dest", "group", "ignore_hidden",
        "mode", "owner", "regexp", "remote_src", "selevel", "serole", "setype", "seuser", "src",
        "unsafe_writes", "validate",
    ]),
    ("assert", &[
        "fail_msg", "msg", "quiet", "success_msg", "that",
    ]),
    ("blockinfile", &[
        "attr", "attributes", "backup", "block", "content", "create", "dest", "destfile", "group",
        "insertafter", "insertbefore", "marker", "marker_begin", "marker_end", "mode", "name",
        "owner", "path", "selevel", "serole", "setype", "seuser", "state", "unsafe_writes",
        "validate",
    ]),
    ("command", &[
        "_raw_params", "_uses_shell", "argv", "chdir", "cmd", "creates", "executable",
        "free_form", "removes", "stdin", "stdin_add_newline", "strip_empty_ends",
    ]),
    ("copy", &[
        "_original_basename", "attr", "attributes", "backup", "checksum", "content", "decrypt",
        "dest", "directory_mode", "follow", "force", "group", "local_follow", "mode", "owner",
        "remote_src", "selevel", "serole", "setype", "seuser", "src", "unsafe_writes", "validate",
    ]),
    ("debconf", &[
        "answer", "name", "pkg", "question", "selection", "setting", "unseen", "value", "vtype",
    ]),
    ("debug", &[
        "msg", "var", "verbosity",
    ]),
    ("dnf", &[
        "allow_downgrade", "allowerasing", "autoremove", "bugfix", "cacheonly", "conf_file",
        "disable_excludes", "disable_gpg_check", "disable_plugin", "disablerepo", "download_dir",
        "download_only", "enable_plugin", "enablerepo", "exclude", "expire-cache",
        "install_repoquery", "install_weak_deps", "installroot", "list", "lock_timeout", "name",
        "nobest", "pkg", "releasever", "security", "skip_broken", "sslverify", "state",
        "update_cache", "update_only", "validate_certs",
    ]),
    ("fail", &[
        "msg",
    ]),
    ("file", &[
        "_diff_peek", "_original_basename", "access_time", "access_time_format", "attr",
        "attributes", "dest", "follow", "force", "group", "mode", "modification_time",
        "modification_time_format", "name", "owner", "path", "recurse", "selevel", "serole",
        "setype", "seuser", "src", "state", "unsafe_writes",
    ]),
    ("find", &[
        "age", "age_stamp", "contains", "depth", "exclude", "excludes", "file_type", "follow",
        "get_checksum", "hidden", "name", "path", "paths", "pattern", "patterns",
        "read_whole_file", "recurse", "size", "use_regex",
    ]),
    ("get_url", &[
        "attr", "attributes", "backup", "checksum", "ciphers", "client_cert", "client_key",
        "decompress", "dest", "force", "force_basic_auth", "group", "headers", "http_agent",
        "mode", "owner", "password", "selevel", "serole", "setype", "seuser", "timeout",
        "tmp_dest", "unredirected_headers", "unsafe_writes", "url", "url_password",
        "url_username", "use_gssapi", "use_netrc", "use_proxy", "username", "validate_certs",
    ]),
    ("getent", &[
        "database", "fail_key", "key", "service", "split",
    ]),
    ("group", &[
        "gid", "local", "name", "non_unique", "state", "system",
    ]),
    ("group_by", &[
        "key", "parents",
    ]),
    ("include_vars", &[
        "depth", "dir", "extensions", "file", "files_matching", "free-form", "hash_behaviour",
        "ignore_files", "ignore_unknown_extensions", "name",
    ]),
    ("ini_file", &[
        "allow_no_value", "attr", "attributes", "backup", "create", "dest", "exclusive", "group",
        "mode", "no_extra_spaces", "option", "owner", "path", "section", "selevel", "serole",
        "setype", "seuser", "state", "unsafe_writes", "value", "values",
    ]),
    ("kernel_blacklist", &[
        "blacklist_file", "name", "state",
    ]),
    ("known_hosts", &[
        "hash_host", "host", "key", "name", "path", "state",
    ]),
    ("lineinfile", &[
        "attr", "attributes", "backrefs", "backup", "create", "dest", "destfile", "firstmatch",
        "group", "insertafter", "insertbefore", "line", "mode", "name", "others", "owner", "path",
        "regex", "regexp", "search_string", "selevel", "serole", "setype", "seuser", "state",
        "unsafe_writes", "validate", "value",
    ]),
    ("meta", &[
        "free_form",
    ]),
    ("modprobe", &[
        "name", "params", "persistent", "state",
    ]),
    ("mount", &[
        "backup", "boot", "dump", "fstab", "fstype", "name", "opts", "passno", "path", "src",
        "state",
    ]),
    ("package", &[
        "name", "state", "use",
    ]),
    ("package_facts", &[
        "manager", "strategy",
    ]),
    ("pam_limits", &[
        "backup", "comment", "dest", "domain", "limit_item", "limit_type", "use_max", "use_min",
        "value",
    ]),
    ("patch", &[
        "backup", "basedir", "binary", "dest", "ignore_whitespace", "originalfile", "patchfile",
        "remote_src", "src", "state", "strip",
    ]),
    ("pause", &[
        "echo", "minutes", "prompt", "seconds",
    ]),
    ("pip", &[
        "chdir", "editable", "executable", "extra_args", "name", "requirements", "state", "umask",
        "version", "virtualenv", "virtualenv_command", "virtualenv_python",
        "virtualenv_site_packages",
    ]),
    ("ping", &[
        "data",
    ]),
    ("reboot", &[
        "boot_time_command", "connect_timeout", "msg", "post_reboot_delay", "pre_reboot_delay",
        "reboot_command", "reboot_timeout", "search_paths", "test_command",
    ]),
    ("replace", &[
        "after", "attr", "attributes", "backup", "before", "dest", "destfile", "encoding",
        "group", "mode", "name", "others", "owner", "path", "regexp", "replace", "selevel",
        "serole", "setype", "seuser", "unsafe_writes", "validate",
    ]),
    ("rpm_key", &[
        "fingerprint", "key", "state", "validate_certs",
    ]),
    ("script", &[
        "chdir", "cmd", "creates", "decrypt", "executable", "free_form", "removes",
    ]),
    ("selinux", &[
        "conf", "configfile", "file", "policy", "state", "update_kernel_param",
    ]),
    // The service action hands its options to the module of the service manager: systemd's
    // are taken where systemd manages services.
    ("service", &[
        "args", "arguments", "daemon-reexec", "daemon-reload", "daemon_reexec", "daemon_reload",
        "enabled", "force", "masked", "name", "no_block", "pattern", "runlevel", "scope", "sleep",
        "state", "use",
    ]),
    ("service_facts", &[
    ]),
    ("set_fact", &[
        "cacheable", "key_value",
    ]),
    ("setup", &[
        "fact_path", "filter", "gather_subset", "gather_timeout",
    ]),
    ("shell", &[
        "_raw_params", "_uses_shell", "argv", "chdir", "cmd", "creates", "executable",
        "free_form", "removes", "stdin", "stdin_add_newline", "strip_empty_ends",
    ]),
    ("slurp", &[
        "path", "src",
    ]),
    ("stat", &[
        "attr", "attributes", "checksum", "checksum_algo", "checksum_algorithm", "dest", "follow",
        "get_attributes", "get_checksum", "get_md5", "get_mime", "mime", "mime-type", "mime_type",
        "name", "path",
    ]),
    ("synchronize", &[
        "_local_rsync_password", "_local_rsync_path", "_substitute_controller", "archive",
        "checksum", "compress", "copy_links", "delay_updates", "delete", "dest", "dest_port",
        "dirs", "existing_only", "group", "link_dest", "links", "mode", "owner", "partial",
        "perms", "private_key", "recursive", "rsync_opts", "rsync_path", "rsync_timeout",
        "set_remote_user", "src", "ssh_args", "ssh_connection_multiplexing", "times",
        "use_ssh_args", "verify_host",
    ]),
    ("sysctl", &[
        "ignoreerrors", "key", "name", "reload", "state", "sysctl_file", "sysctl_set", "val",
        "value",
    ]),
    ("systemd", &[
        "daemon-reexec", "daemon-reload", "daemon_reexec", "daemon_reload", "enabled", "force",
        "masked", "name", "no_block", "scope", "service", "state", "unit",
    ]),
    ("tempfile", &[
        "path", "prefix", "state", "suffix",
    ]),
    ("template", &[
        "attr", "attributes", "backup", "block_end_string", "block_start_string",
        "comment_end_string", "comment_start_string", "dest", "follow", "force", "group",
        "lstrip_blocks", "mode", "newline_sequence", "output_encoding", "owner", "selevel",
        "serole", "setype", "seuser", "src", "trim_blocks", "unsafe_writes", "validate",
        "variable_end_string", "variable_start_string",
    ]),
    ("timezone", &[
        "hwclock", "name", "rtc",
    ]),
    ("unarchive", &[
        "attr", "attributes", "copy", "creates", "decrypt", "dest", "exclude", "extra_opts",
        "group", "include", "io_buffer_size", "keep_newer", "list_files", "mode", "owner",
        "remote_src", "selevel", "serole", "setype", "seuser", "src", "unsafe_writes",
        "validate_certs",
    ]),
    ("uri", &[
        "attr", "attributes", "body", "body_format", "ca_path", "ciphers", "client_cert",
        "client_key", "creates", "decompress", "dest", "follow_redirects", "force",
        "force_basic_auth", "group", "headers", "http_agent", "method", "mode", "owner", "password",
        "remote_src", "removes", "return_content", "selevel", "serole", "setype", "seuser", "src",
        "status_code", "timeout", "unix_socket", "unredirected_headers", "unsafe_writes", "url",
        "url_password", "url_username", "use_gssapi", "use_netrc", "use_proxy", "user",
        "validate_certs",
    ]),
    ("user", &[
        "append", "authorization", "comment", "create_home", "createhome", "expires", "force",
        "generate_ssh_key", "group", "groups", "hidden", "home", "local", "login_class",
        "move_home", "name", "non_unique", "password", "password_expire_max",
        "password_expire_min", "password_lock", "profile", "remove", "role", "seuser", "shell",
        "skeleton", "ssh_key_bits", "ssh_key_comment", "ssh_key_file", "ssh_key_passphrase",
        "ssh_key_type", "state", "system", "uid", "umask", "update_password", "user",
    ]),
    ("wait_for", &[
        "active_connection_states", "connect_timeout", "delay", "exclude_hosts", "host", "msg",
        "path", "port", "search_regex", "sleep", "state", "timeout",
    ]),
    ("wait_for_connection", &[
        "connect_timeout", "delay", "sleep", "timeout",
    ]),
    ("yum", &[
        "allow_downgrade", "allowerasing", "autoremove", "bugfix", "cacheonly", "conf_file",
        "disable_excludes", "disable_gpg_check", "disable_plugin", "disablerepo", "download_dir",
        "download_only", "enable_plugin", "enablerepo", "exclude", "expire-cache",
        "install_repoquery", "install_weak_deps", "installroot", "list", "lock_timeout", "name",
        "nobest", "pkg", "releasever", "security", "skip_broken", "sslverify", "state",
        "update_cache", "update_only", "use_backend", "validate_certs",
    ]),
    ("yum_repository", &[
        "async", "attr", "attributes", "bandwidth", "baseurl", "ca_cert", "client_cert",
        "client_key", "cost", "deltarpm_metadata_percentage", "deltarpm_percentage",
        "description", "enabled", "enablegroups", "exclude", "failovermethod", "file", "gpgcakey",
        "gpgcheck", "gpgkey", "group", "http_caching", "include", "includepkgs", "ip_resolve",
        "keepalive", "keepcache", "metadata_expire", "metadata_expire_filter", "metalink",
        "mirrorlist", "mirrorlist_expire", "mode", "module_hotfixes", "name", "owner", "params",
        "password", "priority", "protect", "proxy", "proxy_password", "proxy_username",
        "repo_gpgcheck", "reposdir", "retries", "s3_enabled", "selevel", "serole", "setype",
        "seuser", "skip_if_unavailable", "ssl_check_cert_permissions", "sslcacert",
        "sslclientcert", "sslclientkey", "sslverify", "state", "throttle", "timeout",
        "ui_repoid_vars", "unsafe_writes", "username", "validate_certs",
    ]),
];

/// The action plugins of ansible-core 2.14 that refuse `async`. Those of command, package,
/// service, uri, yum and reboot take it, as does every module without a plugin of its own (the
/// normal action).
pub const REFUSING_ASYNC: &[&str] = &[
    "add_host",
    "assemble",
    "assert",
    "async_status",
    "copy",
    "debug",
    "fail",
    "fetch",
    "gather_facts",
    "group_by",
    "include_vars",
    "pause",
    "raw",
    "script",
    "set_fact",
    "set_stats",
    "template",
    "unarchive",
    "validate_argument_spec",
    "wait_for_connection",
];

/// An option an earlier ansible-core took that 2.14 removed: 2.14 refuses it when the task
/// runs, as an unsupported parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Removed {
    /// The modules that took it.
    pub modules: &'static [&'static str],
    /// The option.
    pub option: &'static str,
    /// The last ansible-core that took it.
    pub last_taken: &'static str,
}

/// The options ansible-core 2.14 removed from modules imgbuild implements.
pub const REMOVED_IN_2_14: &[Removed] = &[Removed {
    modules: &["command", "shell"],
    option: "warn",
    last_taken: "2.13",
}];

/// The removal of `option` from `module`, when 2.14 removed it.
pub fn removed(module: &str, option: &str) -> Option<&'static Removed> {
    REMOVED_IN_2_14
        .iter()
        .find(|r| r.option == option && r.modules.contains(&module))
}

#[cfg(test)]
mod tests {
    use super::ANSIBLE_2_14;
    use crate::{not_yet_supported, ALL};

    /// The fields a module's parameters take, from serde's "expected one of" list.
    fn fields(spec: &crate::ModuleSpec) -> Vec<String> {
        let probe = serde_json::json!({ "__not_an_option__": 1 });
        let message = (spec.normalize)(probe).err().unwrap_or_default();
        message
            .split_once("expected one of ")
            .map(|(_, list)| {
                list.split(", ")
                    .map(|f| f.trim_matches(|c| c == '`' || c == ' ').to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Options imgbuild takes that ansible-core 2.14 does not: a later release's (roles written
    /// for it run unchanged), imgbuild's reading of a free-form argument, or what the plan
    /// itself puts in a task's arguments.
    const BEYOND_2_14: &[(&str, &str, &str)] = &[
        (
            "unarchive",
            "ansible_code",
            "the plan's: where Ansible's module that extracts a zip comes from, its digest",
        ),
        ("blockinfile", "prepend_newline", "a later ansible-core"),
        ("blockinfile", "append_newline", "a later ansible-core"),
        ("command", "expand_argument_vars", "a later ansible-core"),
        ("dnf", "use_backend", "a later ansible-core"),
        ("group", "force", "a later ansible-core"),
        ("group", "gid_min", "a later ansible-core"),
        ("group", "gid_max", "a later ansible-core"),
        ("yum_repository", "excludepkgs", "a later ansible-core"),
        ("yum_repository", "countme", "a later ansible-core"),
        (
            "ini_file",
            "key",
            "a later community.general (alias of option)",
        ),
        (
            "package",
            "pkg",
            "free form: imgbuild's name for a package given bare",
        ),
        ("include_vars", "cmd", "free form: the file given bare"),
        (
            "include_vars",
            "free_form",
            "free form: the file given bare",
        ),
        (
            "script",
            "_raw_params",
            "free form: the script and its arguments",
        ),
    ];

    #[test]
    fn every_option_imgbuild_takes_is_one_ansible_takes() {
        let mut invented = Vec::new();
        for spec in ALL {
            let Some((_, options)) = ANSIBLE_2_14.iter().find(|(m, _)| *m == spec.name) else {
                continue;
            };
            for field in fields(spec) {
                let later = BEYOND_2_14
                    .iter()
                    .any(|(m, f, _)| *m == spec.name && *f == field);
                if !options.contains(&field.as_str()) && !later {
                    invented.push(format!("{}: {field}", spec.name));
                }
            }
        }
        assert!(
            invented.is_empty(),
            "not options of Ansible 2.14: {invented:?}"
        );
    }

    #[test]
    fn valid_ansible_is_refused_as_not_supported_yet_never_as_unknown() {
        assert!(not_yet_supported("apt", "allow_downgrade").is_some());
        assert!(not_yet_supported("command", "warn").is_some_and(|w| w.contains("2.13")));
        assert!(not_yet_supported("apt", "dset").is_none());
        assert!(not_yet_supported("no_such_module", "x").is_none());
    }
}
