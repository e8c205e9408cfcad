//! Which of ansible-core's integration targets the conformance suite runs, and what it expects.

/// Targets that run to their end under `imgbuild apply`: one that stops fails the suite.
pub const PASSING: &[&str] = &[
    "command_nonexisting",
    "controller",
    "dict_transformations",
    "embedded_module",
    "groupby_filter",
    "ignore_errors",
    "include_import_tasks_nested",
    "lookup_items",
    "lookup_list",
    "lookup_nested",
    "module_utils_ansible_release",
    "package",
    "package_facts",
    "task_ordering",
    "var_inheritance",
];

/// Targets that run but still stop, with what stops them: one that runs to its end fails the
/// suite until it moves to [`PASSING`].
pub const OPEN: &[(&str, &str)] = &[
    (
        "apt",
        "fails at build: Assertion failed",
    ),
    (
        "apt_key",
        "roles/apt_key/tasks/apt_key.yml:6: module 'apt_key': apt_key needs one of: url, data, file",
    ),
    (
        "assemble",
        "roles/assemble/tasks/main.yml:33: unknown module or task keyword 'assemble'",
    ),
    (
        "blockinfile",
        "fails at build: Assertion failed",
    ),
    (
        "changed_when",
        "roles/changed_when/tasks/main.yml:43: unknown module or task keyword 'group_by'",
    ),
    (
        "command_shell",
        "roles/command_shell/tasks/main.yml:6: module 'command': unknown field `executable`, expected one of `_raw_params`, `cmd`, `argv`, `chdir`, `creates...",
    ),
    (
        "copy",
        "roles/copy/tasks/main.yml:6: 'delegate_to' is not supported in image builds: it names host 'localhost', and an image build has no host but the imag...",
    ),
    (
        "cron",
        "roles/setup_cron/tasks/main.yml:79: module 'service': unknown field `daemon-reload`, expected one of `name`, `enabled`, `state`, `args`, `arguments...",
    ),
    (
        "debconf",
        "roles/debconf/tasks/main.yml:25: unknown module or task keyword 'debconf'",
    ),
    (
        "failed_when",
        "fails at build: Assertion failed",
    ),
    (
        "file",
        "roles/file/tasks/state_link.yml:375: module 'file': state=link and state=hard need src (the link target)",
    ),
    (
        "filter_core",
        "roles/filter_core/vars/main.yml:106: YAML syntax error: invalid indentation (column 1)",
    ),
    (
        "filter_mathstuff",
        "roles/filter_mathstuff/tasks/main.yml:208: in task 'Verify human_to_bytes': template error in `{{'0'|human_to_bytes}}        == 0`: unknown filter:...",
    ),
    (
        "filter_urls",
        "fails at build: unknown filter: filter urldecode is unknown in 'urldecoded_string == urlencoded_string|urldecode' (roles/filter_urls/tasks/main.yml:9)",
    ),
    (
        "filter_urlsplit",
        "fails at build: unknown filter: filter urlsplit is unknown in ''http://mary:***@www.acme.com:9000/dir/index.html?query=term#fragment' | urlsplit('f...",
    ),
    (
        "find",
        "roles/find/tasks/main.yml:128: module 'find': unknown field `read_whole_file`, expected one of `name`, `path`, `paths`, `pattern`, `patterns`, `exc...",
    ),
    (
        "get_url",
        "roles/setup_remote_constraints/tasks/main.yml:5: file 'roles/setup_remote_constraints/../../../lib/ansible_test/_data/requirements/constraints.txt'...",
    ),
    (
        "getent",
        "roles/getent/tasks/main.yml:27: unknown module or task keyword 'getent'",
    ),
    (
        "group",
        "roles/group/tasks/tests.yml:205: 'action' is not supported in image builds: write the module as the task key (for example 'shell: ...')",
    ),
    (
        "hostname",
        "roles/hostname/tasks/main.yml:2: template error in `ansible_facts.virtualization_type not in ('docker', 'container', 'containerd')`: undefined valu...",
    ),
    (
        "include_parent_role_vars",
        "fails at build: undefined variable 'ansible_parent_role_names' in 'ansible_parent_role_names == ['special_vars']' (roles/include_parent_role_vars/t...",
    ),
    (
        "include_vars",
        "roles/include_vars/tasks/main.yml:32: module 'include_vars': unknown field `depth`, expected one of `cmd`, `file`, `free_form`, `dir`, `name`",
    ),
    (
        "known_hosts",
        "roles/known_hosts/tasks/main.yml:28: unknown module or task keyword 'known_hosts'",
    ),
    (
        "lineinfile",
        "backreferences are not supported",
    ),
    (
        "lookup_config",
        "roles/lookup_config/tasks/main.yml:13: in task 'Verify lookup_config does not error with on_missing=skip': template error in `lookup(\"config\", \"...",
    ),
    (
        "lookup_csvfile",
        "fails at build: Assertion failed",
    ),
    (
        "lookup_dict",
        "roles/lookup_dict/tasks/main.yml:11: in task 'Convert users dict to list': template error in `lookup('dict', users) | sort(attribute='key')`: inval...",
    ),
    (
        "lookup_env",
        "fails at build: Assertion failed",
    ),
    (
        "lookup_file",
        "roles/lookup_file/tasks/main.yml:4: in task 'load the file as a fact': template error in `lookup('file', output_dir + '/foo.txt' )`: invalid operat...",
    ),
    (
        "lookup_first_found",
        "roles/lookup_first_found/tasks/main.yml:46: in task 'test first_found with no matches and skip=True does nothing': template error in `q('first_foun...",
    ),
    (
        "lookup_indexed_items",
        "roles/lookup_indexed_items/tasks/main.yml:5: with_indexed_items over a value only the build knows is not supported; use loop: with a filter",
    ),
    (
        "lookup_lines",
        "roles/lookup_lines/tasks/main.yml:1: in task 'test with_lines': template error in `query('lines', __imgbuild_term_0)`: invalid operation: unknown l...",
    ),
    (
        "lookup_password",
        "roles/lookup_password/tasks/main.yml:1: in task 'create a password file': template error in `lookup('password', output_dir + '/lookup/password leng...",
    ),
    (
        "lookup_pipe",
        "roles/lookup_pipe/tasks/main.yml:2: in task 'confirm pipe lookup works with a single positional arg': template error in `lookup('pipe', 'echo $OUTP...",
    ),
    (
        "lookup_random_choice",
        "roles/lookup_random_choice/tasks/main.yml:1: in task 'test with_random_choice': template error in `query('random_choice', __imgbuild_term_0, __imgb...",
    ),
    (
        "lookup_sequence",
        "roles/lookup_sequence/tasks/main.yml:42: in task 'test with_sequence shortcut syntax (end)': template error in `query('sequence', __imgbuild_term_0...",
    ),
    (
        "lookup_subelements",
        "roles/lookup_subelements/tasks/main.yml:15: with_subelements: an item has no list 'the.sub.key.list' (add skip_missing: true to skip it)",
    ),
    (
        "lookup_template",
        "roles/lookup_template/tasks/main.yml:2: in task 'Test that we have a proper jinja search path in template lookup': template error in `lookup('templ...",
    ),
    (
        "lookup_together",
        "fails at build: Assertion failed",
    ),
    (
        "lookup_url",
        "roles/setup_remote_constraints/tasks/main.yml:5: file 'roles/setup_remote_constraints/../../../lib/ansible_test/_data/requirements/constraints.txt'...",
    ),
    (
        "lookup_varnames",
        "fails at build: invalid operation: unknown lookup 'varnames'; imgbuild knows file, template, env, first_found, fileglob, vars and sequence in 'look...",
    ),
    (
        "lookup_vars",
        "fails at build: Assertion failed",
    ),
    (
        "loop-until",
        "roles/loop-until/tasks/main.yml:23: module 'set_fact': the variable name 'until_tempfile_path_{{ idx }}' is known only when the build runs (it uses...",
    ),
    (
        "loops",
        "roles/loops/tasks/main.yml:28: in task 'Measure time before loop with .5s pause': template error in `times|default([]) + [ now(fmt='%s.%f') ]`: unk...",
    ),
    (
        "replace",
        "fails at build: unknown test: test successful is unknown in 'replace_test0 is successful' (roles/replace/tasks/main.yml:33)",
    ),
    (
        "script",
        "roles/script/tasks/main.yml:50: script ''space' not found (looked for roles/script/files/'space, roles/script/'space, roles/script/tasks/files/'spa...",
    ),
    (
        "service",
        "roles/service/tasks/main.yml:11: in task 'rewrite shebang in the test daemon script': template error in `#!{{ ansible_python_interpreter | realpath...",
    ),
    (
        "service_facts",
        "roles/service_facts/tasks/systemd_setup.yml:7: in task 'rewrite shebang in the test daemon script': template error in `#!{{ ansible_python_interpre...",
    ),
    (
        "slurp",
        "roles/setup_test_user/tasks/default.yml:6: in task 'set plaintext password': template error in `lookup('password', '/dev/null')`: invalid operation...",
    ),
    (
        "special_vars",
        "roles/special_vars/templates/foo.j2: in task 'verify ansible_managed': undefined variable 'template_host'; define it in the recipe's vars, the role...",
    ),
    (
        "stat",
        "fails at build: Assertion failed",
    ),
    (
        "systemd",
        "roles/systemd/tasks/test_unit_template.yml:43: name must be a string, not null",
    ),
    (
        "template",
        "roles/template/tasks/main.yml:26: in task 'show jinja2 version': template error in `{{ lookup('pipe', '{{ ansible_python[\"executable\"] }} -c \"im...",
    ),
    (
        "templating",
        "fails at build: syntax error: unexpected end of input, expected expression in 'result.stdout_lines|first == expected' (roles/templating/tasks/main....",
    ),
    (
        "test_core",
        "roles/test_core/tasks/main.yml:339: YAML syntax error: ansible-vault values are not supported; pass secrets with -e or a file outside the recipe (c...",
    ),
    (
        "test_files",
        "fails at build: unknown test: test is_dir is unknown in ''.' is is_dir' (roles/test_files/tasks/main.yml:9)",
    ),
    (
        "test_mathstuff",
        "fails at build: unknown test: test issubset is unknown in '[1] is issubset([1, 2])' (roles/test_mathstuff/tasks/main.yml:1)",
    ),
    (
        "unarchive",
        "roles/setup_test_user/tasks/default.yml:6: in task 'set plaintext password': template error in `lookup('password', '/dev/null')`: invalid operation...",
    ),
    (
        "undefined",
        "fails at build: invalid operation: invalid conversion type 'r' in format spec at offset 1 in '(\"%r\"|format(undefined_variable)).startswith(\"Ansi...",
    ),
    (
        "until",
        "roles/until/tasks/main.yml:79: unknown module or task keyword 'shell_no_failed'",
    ),
    (
        "user",
        "roles/user/tasks/test_create_user_password.yml:31: unknown module or task keyword 'getent'",
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
        "lookup_fileglob",
        "script target: runme.sh runs ansible-playbook with its own inventory and options",
    ),
    (
        "lookup_ini",
        "script target: runme.sh runs ansible-playbook with its own inventory and options",
    ),
    (
        "lookup_inventory_hostnames",
        "script target: runme.sh runs ansible-playbook with its own inventory and options",
    ),
    (
        "lookup_unvault",
        "script target: runme.sh runs ansible-playbook with its own vault options",
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
