//! Which of ansible-core's integration targets the conformance suite runs, and what it expects.

use std::path::Path;

/// Targets whose `runme.sh` gives ansible-playbook `--vault-password-file`, with the file.
const VAULTED: &[(&str, &str)] = &[
    ("test_core", "vault-password"),
    ("lookup_unvault", "secret"),
];

/// The options a target's `runme.sh` gives ansible-playbook, as imgbuild takes them (`dir` is
/// the target's folder).
pub fn extra_args(target: &str, dir: &Path) -> Vec<String> {
    match VAULTED.iter().find(|(name, _)| *name == target) {
        Some((_, file)) => {
            let file = dir.join(file);
            vec!["--vault-password-file".into(), file.display().to_string()]
        }
        None => Vec::new(),
    }
}

/// Script targets whose `runme.sh` runs one playbook of the target's, with no inventory or
/// option of its own but a vault password: the suite runs that playbook as the image's recipe
/// (the target's play, with the variables an imgbuild recipe has), its files beside it.
pub const PLAYBOOKS: &[(&str, &str)] = &[("lookup_unvault", "unvault.yml")];

/// Script targets whose `runme.sh` runs one playbook of `import_playbook`s against the target's
/// inventory, whose one host is `testhost` with the local connection: the suite runs each
/// imported playbook as a recipe of its own (an image's recipe is one play), in order on the
/// same root, with the target's data files beside them.
pub const PLAYBOOK_IMPORTS: &[(&str, &str)] = &[("lookup_ini", "test_ini.yml")];

/// The playbooks a playbook of `- import_playbook: X` lines imports, in order.
pub fn imports(playbook: &Path) -> Vec<String> {
    std::fs::read_to_string(playbook)
        .expect("the target's playbook")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- import_playbook:"))
        .map(|f| f.trim().to_owned())
        .collect()
}

/// The recipes `imgbuild apply` runs for a target, in order (`dir` is the target's folder).
pub fn recipes(target: &str, dir: &Path) -> Vec<String> {
    match PLAYBOOK_IMPORTS.iter().find(|(t, _)| *t == target) {
        Some((_, file)) => imports(&dir.join(file))
            .iter()
            .map(|f| format!("{target}-{}", f.trim_end_matches(".yml")))
            .collect(),
        None => vec![target.to_owned()],
    }
}

/// Targets whose `runme.sh` plays the role against `localhost` with the target's own
/// `host_vars/localhost`: the image is that host, so the suite gives the image those variables
/// (`images/host_vars/<target>.yml`, which imgbuild reads as ansible-playbook does).
pub const LOCALHOST_VARS: &[&str] = &["filter_core", "filter_mathstuff"];

/// Targets whose `runme.sh` plays from the target's folder and read `playbook_dir + '/files'`:
/// the suite gives the image's playbook folder the target's `files/` too.
pub const PLAYBOOK_FILES: &[&str] = &["filter_core", "lookup_unvault"];

/// Targets that run to their end under `imgbuild apply`: one that stops fails the suite.
pub const PASSING: &[&str] = &[
    "assemble",
    "blockinfile",
    "changed_when",
    "command_nonexisting",
    "command_shell",
    "controller",
    "debconf",
    "dict_transformations",
    "embedded_module",
    "failed_when",
    "file",
    "filter_core",
    "filter_mathstuff",
    "filter_urls",
    "filter_urlsplit",
    "find",
    "getent",
    "group",
    "groupby_filter",
    "hostname",
    "ignore_errors",
    "include_import_tasks_nested",
    "include_vars",
    "known_hosts",
    "lineinfile",
    "lookup_config",
    "lookup_csvfile",
    "lookup_dict",
    "lookup_env",
    "lookup_first_found",
    "lookup_indexed_items",
    "lookup_ini",
    "lookup_items",
    "lookup_lines",
    "lookup_list",
    "lookup_nested",
    "lookup_pipe",
    "lookup_random_choice",
    "lookup_sequence",
    "lookup_subelements",
    "lookup_template",
    "lookup_together",
    "lookup_unvault",
    "lookup_varnames",
    "lookup_vars",
    "loop-until",
    "module_utils_ansible_release",
    "old_style_modules_posix",
    "package",
    "package_facts",
    "replace",
    "script",
    "service_facts",
    "slurp",
    "stat",
    "task_ordering",
    "tempfile",
    "templating",
    "test_core",
    "test_mathstuff",
    "undefined",
    "until",
    "user",
    "var_inheritance",
    "want_json_modules_posix",
];

/// Targets that run but still stop, with what stops them: one that runs to its end fails the
/// suite until it moves to [`PASSING`].
pub const OPEN: &[(&str, &str)] = &[
    (
        "apt",
        "fails at build (roles/apt/tasks/apt.yml:277): No package matching 'http://ftp.debian.org/debian/pool/main/h/hello' is available (apt's deb: as a URL is handed to apt-get, not downloaded)",
    ),
    (
        "apt_key",
        "roles/apt_key/tasks/apt_key.yml:6: module 'apt_key': keyserver: a key server is a host on the network, and an image's inputs are the project's files a...",
    ),
    (
        "copy",
        "roles/copy/tasks/main.yml:6: 'delegate_to' is not supported in image builds: it runs module 'shell' on the machine running the build (mktemp -d on the controller), which an image build never does",
    ),
    (
        "cron",
        "fails at build (roles/cron/tasks/main.yml:69): argument 'msg': undefined value (the target waits for the cron daemon to run its job, and nothing runs while an image is built: wait_for is skipped, so wait_canary has no elapsed)",
    ),
    (
        "get_url",
        "roles/setup_remote_constraints/tasks/main.yml:5: file 'roles/setup_remote_constraints/../../../lib/ansible_test/_data/requirements/constraints.txt' mu...",
    ),
    (
        "lookup_file",
        "roles/lookup_file/tasks/main.yml:4: lookup('file'): '/root/ansible_testing/output_dir/foo.txt' is not a file of the role (a copy task wrote it in the image; the lookup reads the controller, and under ansible-test the two are one machine)",
    ),
    (
        "lookup_password",
        "fails at build (roles/lookup_password/tasks/main.yml:9): Ansible's password plugin wrote the file on the machine running the build, as on its controller; the target then stats it in the image (under ansible-test the two are one machine)",
    ),
    (
        "lookup_url",
        "roles/setup_remote_constraints/tasks/main.yml:5: file 'roles/setup_remote_constraints/../../../lib/ansible_test/_data/requirements/constraints.txt' mu...",
    ),
    (
        "loops",
        "fails at build (roles/loops/tasks/main.yml:389): assertion: foo[0] != 'foo1.0' (the with_dict item is unsafe now, as Ansible's; hostvars still templates with every variable, not the host's own only)",
    ),
    (
        "service",
        "fails at build (roles/service/tasks/tests.yml:61): assertion: start_result is changed (its module_defaults now apply; the service must be started, and nothing runs while an image is built)",
    ),
    (
        "special_vars",
        "roles/special_vars/templates/foo.j2: in task 'verify ansible_managed': undefined variable 'template_host'; define it in the recipe's vars, the role's ...",
    ),
    (
        "systemd",
        "fails at build (roles/systemd/tasks/main.yml:38): command: systemctl | fgrep 'running' | awk '{print $1}' | sed 's/\\.service//g' | fgrep -v '.' | egr...",
    ),
    (
        "template",
        "roles/template/tasks/main.yml:607: the template's src is a file a task delegated to localhost writes while building (the build's controller folder); the plan looks for it in the project",
    ),
    (
        "test_files",
        "fails at build (roles/test_files/tasks/main.yml:23): assertion: 'link_to_nonexistent_file' is link (evaluated to false)",
    ),
    (
        "unarchive",
        "fails at build (roles/unarchive/tasks/test_download.yml:19): a tar from https://releases.ansible.com (this machine has no such network); without it, the target's next stop is apt's Ubuntu-only language-pack-fr",
    ),
];

/// Targets not run, with why.
pub const NOT_RUN: &[(&str, &str)] = &[
    (
        "apt_repository",
        "Ubuntu only: every task is behind `ansible_distribution == 'Ubuntu'`; the suite's rootfs is Debian",
    ),
    (
        "dnf",
        "EL only (dnf): issue \"the EL path\"",
    ),
    (
        "include_parent_role_vars",
        "part of special_vars (hidden): runs only included by it",
    ),
    (
        "lookup_fileglob",
        "script target: runme.sh runs ansible-playbook with its own inventory and options",
    ),
    (
        "lookup_inventory_hostnames",
        "script target: runme.sh runs ansible-playbook with its own inventory and options",
    ),
    (
        "reboot",
        "reboots the host: an image build has no running machine to reboot",
    ),
    (
        "yaml_parsing",
        "runs ansible-playbook itself with its own options (a test of the controller's YAML loader)",
    ),
    (
        "yum",
        "EL only (yum): issue \"the EL path\"",
    ),
    (
        "yum_repository",
        "EL only: issue \"the EL path\"",
    ),
];
