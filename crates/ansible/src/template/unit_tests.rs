use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::vars::{Layer, Scope, VarValue};
use serde_json::Value as Json;

fn scope(pairs: &[(&str, Json)]) -> Scope {
    let layer: Layer = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), VarValue::Raw(v.clone())))
        .collect();
    Scope::default().with_layer(Arc::new(layer))
}

fn render(t: &Templar, s: &str, sc: &Scope) -> Result<Option<Json>, TemplateError> {
    t.render(&json!(s), sc)
}

#[test]
fn lazy_recursive_resolution() {
    let t = Templar::new();
    let sc = scope(&[
        ("url", json!("{{ mirror }}/mellanox/{{ distro }}/")),
        ("mirror", json!("http://m/")),
        ("distro", json!("rocky{{ major }}")),
        ("major", json!("8")),
    ]);
    assert_eq!(
        render(&t, "{{ url }}x", &sc),
        Ok(Some(json!("http://m//mellanox/rocky8/x")))
    );
}

#[test]
fn native_types_for_single_expressions() {
    let t = Templar::new();
    let sc = scope(&[("pkgs", json!(["a", "b"])), ("n", json!(3))]);
    assert_eq!(render(&t, "{{ pkgs }}", &sc), Ok(Some(json!(["a", "b"]))));
    assert_eq!(render(&t, "{{ n + 1 }}", &sc), Ok(Some(json!(4))));
    assert_eq!(render(&t, "n={{ n }}", &sc), Ok(Some(json!("n=3"))));
}

#[test]
fn undefined_names_the_variable_and_chain() {
    let t = Templar::new();
    let sc = scope(&[("url", json!("{{ mirror_serverr }}/x"))]);
    match render(&t, "get {{ url }}", &sc) {
        Err(TemplateError::Undefined { name, chain }) => {
            assert_eq!(name, "mirror_serverr");
            assert_eq!(chain, vec!["url".to_string()]);
        }
        other => panic!("expected undefined, got {other:?}"),
    }
}

#[test]
fn attributes_of_an_undefined_variable_chain_into_default_and_defined() {
    let t = Templar::new();
    let sc = scope(&[("n", json!(3))]);
    assert_eq!(
        render(&t, "{{ molecule.driver.name | default('none') }}", &sc),
        Ok(Some(json!("none")))
    );
    assert_eq!(
        t.condition("molecule.driver.name | default() != 'docker'", &sc),
        Ok(Condition::Known(true))
    );
    assert_eq!(
        t.condition("m['x'].y is not defined and n == 3", &sc),
        Ok(Condition::Known(true))
    );
    // Printed, or used without a guard, it is still the undefined variable.
    for text in [
        "{{ m.a }}",
        "{{ m.a | default(1) }} {{ m.b }}",
        "{{ m.a | upper }}",
    ] {
        match render(&t, text, &sc) {
            Err(TemplateError::Undefined { name, .. }) => assert_eq!(name, "m", "{text}"),
            other => panic!("{text}: expected undefined, got {other:?}"),
        }
    }
}

#[test]
fn cycles_are_detected() {
    let t = Templar::new();
    let sc = scope(&[("a", json!("{{ b }}")), ("b", json!("x{{ a }}"))]);
    match render(&t, "{{ a }}", &sc) {
        Err(TemplateError::Cycle(chain)) => assert_eq!(chain, "a -> b -> a"),
        other => panic!("expected cycle, got {other:?}"),
    }
    // A cycle hidden behind `is defined` is still an error.
    assert!(matches!(
        render(&t, "{{ a is defined }}", &sc),
        Err(TemplateError::Cycle(_))
    ));
}

#[test]
fn deferred_names_defer_the_render() {
    let t = Templar::new();
    let layer: Layer = [("result".to_string(), VarValue::Deferred)]
        .into_iter()
        .collect();
    let sc = scope(&[("x", json!(1))]).with_facts_set(Arc::new(layer));
    assert_eq!(render(&t, "{{ result.stdout }}", &sc), Ok(None));
    assert_eq!(
        t.condition("result.rc == 0 and x == 1", &sc),
        Ok(Condition::Deferred)
    );
    assert_eq!(t.condition("x == 1", &sc), Ok(Condition::Known(true)));
    // Text around a {{ }}: templated first, then evaluated, as Ansible's Conditional does.
    assert_eq!(t.condition("not {{ x }}", &sc), Ok(Condition::Known(false)));
    assert_eq!(
        t.condition("{{ x }} == 1 and {{ x }} > 0", &sc),
        Ok(Condition::Known(true))
    );
    assert_eq!(
        t.condition("not {{ result.rc }}", &sc),
        Ok(Condition::Deferred)
    );
}

#[test]
fn ansible_filters() {
    let t = Templar::new();
    let sc = scope(&[("k", json!("4.18.0-553.56.1.el8_10.x86_64"))]);
    let cases = [
        (
            "{{ k | regex_replace('\\.x86_64$', '') }}",
            json!("4.18.0-553.56.1.el8_10"),
        ),
        ("{{ k | regex_search('el(\\d+)', '\\1') }}", json!(["8"])),
        ("{{ '/a/b.tgz' | basename }}", json!("b.tgz")),
        ("{{ '/a/b.tgz' | dirname }}", json!("/a")),
        ("{{ 'a b  c' | split }}", json!(["a", "b", "c"])),
        ("{{ 'a,b' | split(',') | join('-') }}", json!("a-b")),
        ("{{ nope | default('d') }}", json!("d")),
        ("{{ nope | d('d') }}", json!("d")),
        ("{{ 'yes' | bool }}", json!(true)),
        ("{{ None | bool is none }}", json!(true)),
        (
            "{{ [7 | bool, 1 | bool, 'TrUe' | bool] }}",
            json!([false, true, true]),
        ),
        ("{{ '42' | int + 1 }}", json!(43)),
        ("{{ 5 | string }}", json!("5")),
        ("{{ {'a': 1} | to_json }}", json!("{\"a\": 1}")),
        ("{{ '[1,2]' | from_json }}", json!([1, 2])),
        ("{{ 'hi' | b64encode }}", json!("aGk=")),
        ("{{ 'aGk=' | b64decode }}", json!("hi")),
        (
            "{{ 'Aé\n' | b64encode(encoding='utf-16-le') }}",
            json!("QQDpAAoA"),
        ),
        (
            "{{ 'QQDpAAoA' | b64decode(encoding='UTF_16_LE') }}",
            json!("Aé\n"),
        ),
        (
            "{{ 'Aé' | b64encode(encoding='utf-16') | b64decode(encoding='utf-16') }}",
            json!("Aé"),
        ),
        ("{{ 'Aé' | b64encode(encoding='latin-1') }}", json!("Qek=")),
        (
            "{{ 'abc' | hash('sha256') }}",
            json!("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ),
        ("{{ '9.5' is version('9', '>=') }}", json!(true)),
        ("{{ '8.10' is version('9', '>=') }}", json!(false)),
        ("{{ nope is defined }}", json!(false)),
        ("{{ 'ABC' | lower }}", json!("abc")),
        ("{{ 'a-b' | replace('-', '_') }}", json!("a_b")),
        ("{{ 'x' | mandatory }}", json!("x")),
        // PyYAML writes a mapping of plain values inline (checked against yaml.dump).
        // PyYAML writes a mapping of plain values inline (checked against yaml.dump).
        ("{{ {'a': 1} | to_yaml }}", json!("{a: 1}\n")),
        ("{{ 'abc'.startswith('a') }}", json!(true)),
    ];
    for (template, expected) in cases {
        assert_eq!(
            render(&t, template, &sc),
            Ok(Some(expected.clone())),
            "{template}"
        );
    }
}

#[test]
fn mandatory_fails_on_undefined() {
    let t = Templar::new();
    assert!(render(&t, "{{ nope | mandatory }}", &scope(&[])).is_err());
}

#[test]
fn omit_is_a_placeholder() {
    let t = Templar::new();
    assert_eq!(render(&t, "{{ omit }}", &scope(&[])), Ok(Some(json!(OMIT))));
}

#[test]
fn unknown_filter_is_an_error() {
    let t = Templar::new();
    match render(&t, "{{ 'x' | nosuchfilter }}", &scope(&[])) {
        Err(TemplateError::Other { message, .. }) => {
            assert!(message.contains("filter"), "{message}")
        }
        other => panic!("expected error, got {other:?}"),
    }
}

#[test]
fn non_boolean_condition_is_reported() {
    let t = Templar::new();
    let sc = scope(&[("pkgs", json!(["a"]))]);
    assert_eq!(
        t.condition("pkgs", &sc),
        Ok(Condition::NotBoolean("[\"a\"]".into(), true))
    );
}

#[test]
fn vars_magic_variable() {
    let t = Templar::new();
    let sc = scope(&[("a", json!("x"))]);
    assert_eq!(render(&t, "{{ vars['a'] }}", &sc), Ok(Some(json!("x"))));
    let sc = scope(&[("a", json!("x")), ("inventory_hostname", json!("img"))]);
    assert_eq!(
        render(
            &t,
            "{{ hostvars[inventory_hostname]['a'] }}{{ hostvars['localhost'].a }}",
            &sc
        ),
        Ok(Some(json!("xx")))
    );
}

#[test]
fn lookups_read_role_files_and_record_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = dir.path().join("roles/r/files");
    std::fs::create_dir_all(&files).expect("mkdir");
    std::fs::write(files.join("motd"), "hello\n\n").expect("write");
    std::fs::write(files.join("a.repo"), "").expect("write");
    std::fs::write(files.join("b.repo"), "").expect("write");
    std::fs::write(files.join("greeting.j2"), "hi {{ who }}").expect("write");
    lookups::set_search(dir.path(), vec![PathBuf::from("roles/r/files")]);
    let t = Templar::new();
    let sc = scope(&[("who", json!("{{ name }}")), ("name", json!("node"))]);
    assert_eq!(
        render(&t, "{{ lookup('template', 'greeting.j2') }}!", &sc),
        Ok(Some(json!("hi node!")))
    );
    assert_eq!(
        render(&t, "{{ lookup('file', 'motd') }}", &sc),
        Ok(Some(json!("hello")))
    );
    assert_eq!(
        render(&t, "{{ query('fileglob', '*.repo') }}", &sc),
        Ok(Some(json!([
            "roles/r/files/a.repo",
            "roles/r/files/b.repo"
        ])))
    );
    assert_eq!(
        render(&t, "{{ lookup('first_found', ['nope', 'motd']) }}", &sc),
        Ok(Some(json!("roles/r/files/motd")))
    );
    assert_eq!(
        render(&t, "{{ 'motd' is file and 'nope' is not exists }}", &sc),
        Ok(Some(json!(true)))
    );
    let reads = lookups::take_reads();
    assert!(
        reads.contains(&PathBuf::from("roles/r/files/motd")),
        "{reads:?}"
    );
    // An absolute path is the building machine's file, read (and recorded) as Ansible's
    // controller reads it; a relative path may not leave the search folders.
    let hostname = render(&t, "{{ lookup('file', '/proc/sys/kernel/ostype') }}", &sc);
    assert_eq!(hostname, Ok(Some(json!("Linux"))));
    assert!(lookups::take_reads().contains(&PathBuf::from("/proc/sys/kernel/ostype")));
    assert!(render(&t, "{{ lookup('file', '../../etc/passwd') }}", &sc).is_err());
    // Absolute paths are tested on the machine running the build, as Ansible's controller does.
    assert_eq!(
        render(
            &t,
            "{{ '/' is directory and '/nonexistent' is not exists }}",
            &sc
        ),
        Ok(Some(json!(true)))
    );
    assert!(render(&t, "{{ lookup('nosuch', 'x') }}", &sc).is_err());
    assert!(render(&t, "{{ lookup('template', 'missing.j2') }}", &sc).is_err());
}

#[test]
fn version_sort_reads_numbers_as_numbers() {
    let t = Templar::new();
    let sc = scope(&[("v", json!(["1.10.0", "1.9.2", "1.9.10", "24.10-2.1.8.0"]))]);
    assert_eq!(
        render(&t, "{{ v | community.general.version_sort }}", &sc),
        Ok(Some(json!(["1.9.2", "1.9.10", "1.10.0", "24.10-2.1.8.0"])))
    );
}

#[test]
fn whitespace_as_jinja2_under_ansible() {
    let t = Templar::new();
    let sc = scope(&[("d", json!({"a": 1, "b": 2}))]);
    let text = "{% if false %}\non\n{% else %}\noff\n{% endif %}\n    {%- for k, v in d | dictsort %}\n{{ k }}={{ v }}\n    {%- endfor %}\n\nlist\n";
    assert_eq!(
        t.render_text(text, &sc),
        Ok(Some("off\na=1b=2\nlist\n".into()))
    );
}

#[test]
fn no_break_spaces_inside_tags_are_spaces() {
    let t = Templar::new();
    let sc = scope(&[("x", json!("v"))]);
    assert_eq!(
        t.render_text("a\u{a0}{{\u{a0}x\u{a0}}}", &sc),
        Ok(Some("a\u{a0}v".into()))
    );
}

/// After a role module that may return facts: known facts stay known, another key of
/// `ansible_facts` or an undefined name defers, and the language's own names still work.
#[test]
fn an_open_fact_mapping_defers_only_what_the_build_may_add() {
    let t = Templar::new();
    let layer: Layer = [
        (
            "ansible_facts".to_string(),
            VarValue::Open(json!({"distribution": "Rocky"})),
        ),
        (crate::vars::ANY_OTHER_NAME.to_string(), VarValue::Deferred),
    ]
    .into_iter()
    .collect();
    let sc = Scope::default().with_layer(Arc::new(layer));
    assert_eq!(
        render(&t, "{{ ansible_facts.distribution }}", &sc),
        Ok(Some(json!("Rocky")))
    );
    assert_eq!(render(&t, "{{ ansible_facts['provider'] }}", &sc), Ok(None));
    assert_eq!(render(&t, "{{ ansible_facts | length }}", &sc), Ok(None));
    assert_eq!(render(&t, "{{ provider_current }}", &sc), Ok(None));
    assert_eq!(
        render(&t, "{{ range(2) | list }} {{ omit is string }}", &sc),
        Ok(Some(json!("[0, 1] True")))
    );
}

/// `comment` as ansible-core 2.14's filter gives it (outputs taken from running its code).
#[test]
fn comment_builds_blocks_as_ansible_does() {
    let t = Templar::new();
    let sc = scope(&[]);
    let cases = [
        ("'Ansible managed' | comment", "#\n# Ansible managed\n#"),
        ("'a\nb' | comment", "#\n# a\n# b\n#"),
        (
            "'system_role:timesync' | comment(prefix='', postfix='')",
            "# system_role:timesync\n",
        ),
        (
            "'x\n\ny' | comment('cblock')",
            "/*\n *\n * x\n *\n * y\n *\n */",
        ),
        ("'x' | comment('xml')", "<!--\n -\n - x\n -\n-->"),
        ("'x' | comment(style='xml')", "<!--\n -\n - x\n -\n-->"),
        ("'x' | comment('c', prefix_count=2)", "//\n//\n// x\n//"),
        ("'x' | comment('erlang', decoration='%% ')", "%%\n%% x\n%%"),
        (
            "'x' | comment(beginning='BEGIN', end='END', postfix_count=0)",
            "BEGIN\n#\n# x\nEND",
        ),
    ];
    for (expr, want) in cases {
        assert_eq!(
            render(&t, &format!("{{{{ {expr} }}}}"), &sc),
            Ok(Some(json!(want))),
            "{expr}"
        );
    }
}

/// A role whose files/ and templates/ the option lookups read, searched from `dir`.
fn role_for_option_lookups(dir: &std::path::Path) {
    let role = dir.join("roles/r");
    std::fs::create_dir_all(role.join("files")).expect("mkdir");
    std::fs::create_dir_all(role.join("templates")).expect("mkdir");
    std::fs::write(
        role.join("files/people.csv"),
        "Smith,Jane\r\n\"von X\",Demo\r\n",
    )
    .expect("write");
    std::fs::write(
        role.join("templates/hello.txt"),
        "Hello {% include 'world.txt' %}!",
    )
    .expect("write");
    std::fs::write(role.join("templates/world.txt"), "world").expect("write");
    std::fs::write(role.join("templates/dict.j2"), "{\"foo\": \"{{ 'bar' }}\"}").expect("write");
    lookups::set_search(
        dir,
        vec![
            PathBuf::from("roles/r/files"),
            PathBuf::from("roles/r/templates"),
        ],
    );
}

#[test]
fn option_lookups_and_includes_work_as_ansibles() {
    let dir = tempfile::tempdir().expect("tempdir");
    role_for_option_lookups(dir.path());
    let t = Templar::new();
    let sc = scope(&[("qz_1", json!("a")), ("qa_1", json!("b"))]);
    let cases = [
        (
            "{{ lookup('csvfile', 'Smith file=people.csv delimiter=, col=1') }}",
            json!("Jane"),
        ),
        (
            "{{ lookup('csvfile', 'von X', file='people.csv', delimiter=',') }}",
            json!("Demo"),
        ),
        (
            "{{ lookup('csvfile', 'nope file=people.csv delimiter=,') }}",
            json!([]),
        ),
        (
            "{{ lookup('template', 'hello.txt') }}",
            json!("Hello world!"),
        ),
        (
            "{{ lookup('template', 'dict.j2') is mapping }}",
            json!(true),
        ),
        (
            "{{ lookup('template', 'dict.j2', convert_data=False) is string }}",
            json!(true),
        ),
        ("{{ lookup('varnames', '^q.*_1') }}", json!("qz_1,qa_1")),
        (
            "{{ lookup('sequence', '2-6/2', wantlist=True) }}",
            json!(["2", "4", "6"]),
        ),
        (
            "{{ lookup('config', 'DEFAULT_BECOME_USER') }}",
            json!("root"),
        ),
        (
            "{{ q('first_found', {'files': 'nope', 'skip': True}) }}",
            json!([]),
        ),
        ("{{ q('first_found', 'nope', errors='ignore') }}", json!([])),
        (
            "{{ q('dict', {'a': 1}) }}",
            json!([{"key": "a", "value": 1}]),
        ),
    ];
    for (template, expected) in cases {
        assert_eq!(render(&t, template, &sc), Ok(Some(expected)), "{template}");
    }
    let failing = [
        ("{{ lookup('varnames', '*') }}", "nothing to repeat"),
        (
            "{{ lookup('vars', 42) }}",
            "Invalid setting identifier, \"42\" is not a string",
        ),
        (
            "{{ lookup('config', 'NOPE') }}",
            "Unable to find setting NOPE",
        ),
        (
            "{{ lookup('pipe', 'echo out; exit 3') }}",
            "lookup_plugin.pipe(echo out; exit 3) returned 3",
        ),
        (
            "{{ lookup('password', '/tmp/x') }}",
            "no ansible-core is on this machine",
        ),
        (
            "{{ q('first_found', 'nope') }}",
            "No file was found when using first_found.",
        ),
    ];
    for (template, words) in failing {
        let err = render(&t, template, &sc).expect_err(template).to_string();
        assert!(err.contains(words), "{template}: {err}");
    }
}

#[test]
fn format_takes_python_repr_conversions() {
    let t = Templar::new();
    let sc = scope(&[("names", json!(["a"]))]);
    assert_eq!(
        t.eval(
            r#"("%r"|format(undefined_variable)).startswith("AnsibleUndefined")"#,
            &sc
        ),
        Ok(Some(json!(true)))
    );
    // The text "['a']" reads as a list, which Ansible's templar makes it.
    assert_eq!(
        render(&t, "{{ '%r' | format(names) }}", &sc),
        Ok(Some(json!(["a"])))
    );
    assert_eq!(
        render(&t, "{{ '%r' | format(names) | string }}", &sc),
        Ok(Some(json!("['a']")))
    );
}

#[test]
fn a_value_holding_an_undefined_item_is_an_error() {
    let t = Templar::new();
    let sc = scope(&[("things", json!([{"name": "a"}, {"other": "b"}]))]);
    let err = t
        .eval(r#"things|map(attribute="name")"#, &sc)
        .expect_err("an item has no name");
    assert!(err.to_string().contains("undefined variable"), "{err}");
    assert_eq!(
        t.eval(r#"things|map(attribute="other", default=1)|list"#, &sc),
        Ok(Some(json!([1, "b"])))
    );
}

#[test]
fn contains_is_python_in() {
    let t = Templar::new();
    let sc = scope(&[
        ("msg", json!("an undefined variable")),
        ("m", json!({"k": 1})),
    ]);
    assert_eq!(
        t.eval("msg is contains 'undefined'", &sc),
        Ok(Some(json!(true)))
    );
    assert_eq!(t.eval("m is contains 'k'", &sc), Ok(Some(json!(true))));
    assert_eq!(t.eval("[1, 2] is contains 3", &sc), Ok(Some(json!(false))));
}

#[test]
fn a_variable_naming_hostvars_is_the_variables_themselves() {
    let t = Templar::new();
    let sc = scope(&[
        ("inventory_hostname", json!("img")),
        ("all_vars", json!("{{ hostvars[inventory_hostname] }}")),
        ("test_var", json!("{{ all_vars.foo }}")),
        ("foo", json!("test")),
    ]);
    assert_eq!(t.eval("test_var == 'test'", &sc), Ok(Some(json!(true))));
}

#[test]
fn subelements_filter_pairs_items_with_their_subelements() {
    let t = Templar::new();
    let sc = scope(&[(
        "users",
        json!([{"name": "a", "keys": ["k1", "k2"]}, {"name": "b"}]),
    )]);
    assert_eq!(
        t.eval(
            "users | subelements('keys', skip_missing=True) | map(attribute=1) | list",
            &sc
        ),
        Ok(Some(json!(["k1", "k2"])))
    );
    let missing = t
        .eval("users | subelements('keys')", &sc)
        .expect_err("b has no keys");
    assert!(
        missing.to_string().contains("could not find 'keys'"),
        "{missing}"
    );
    let kept = scope(&[("users", json!([{"name": "a", "keys": ["k1"]}]))]);
    assert_eq!(
        t.eval("(users | subelements('keys'))[0][0]['keys']", &kept),
        Ok(Some(json!(["k1"]))),
        "the item keeps its list, as Ansible's filter gives it"
    );
    // A list of keys; and Ansible's words for each wrong argument.
    let nested = scope(&[("u", json!([{"a": {"b": [1]}, "n": "x"}]))]);
    assert_eq!(
        t.eval(
            "u | subelements(['a', 'b']) | map(attribute=1) | list",
            &nested
        ),
        Ok(Some(json!([1])))
    );
    for (expr, words) in [
        (
            "{} | subelements(17)",
            "subelements must be a list or a string",
        ),
        (
            "u | subelements('n')",
            "the key 'n' should point to a list, got 'x'",
        ),
        (
            "u | subelements(['n', 'b'])",
            "the key b should point to a dictionary, got 'x'",
        ),
    ] {
        let failed = t.eval(expr, &nested).expect_err(expr).to_string();
        assert!(failed.contains(words), "{expr}: {failed}");
    }
}

#[test]
fn a_template_file_with_other_delimiters_keeps_jinjas_own_as_text() {
    use super::{Delimiter, FileOptions};
    let t = Templar::new();
    let sc = scope(&[("name", json!("node"))]);
    let options = FileOptions {
        delimiters: vec![
            (Delimiter::VariableStart, "[[".into()),
            (Delimiter::VariableEnd, "]]".into()),
            (Delimiter::CommentStart, "[#".into()),
            (Delimiter::CommentEnd, "#]".into()),
        ],
        ..FileOptions::default()
    };
    let text = "[# note #]host [[ name ]] keeps {{ literal }}\n";
    let out = t.render_file(text, &sc, options).expect("renders");
    assert_eq!(out.as_deref(), Some("host node keeps {{ literal }}\n"));
}

#[test]
fn none_renders_as_ansibles_finalize_renders_it() {
    let t = Templar::new();
    let sc = scope(&[("nv", Json::Null)]);
    assert_eq!(render(&t, "{{ nv }}", &sc), Ok(Some(Json::Null)));
    assert_eq!(render(&t, "{{ None }}", &sc), Ok(Some(json!(""))));
    assert_eq!(
        render(&t, "{{ nv if true else 1 }}", &sc),
        Ok(Some(json!("")))
    );
    assert_eq!(render(&t, "x{{ None }}", &sc), Ok(Some(json!("x"))));
    assert_eq!(render(&t, "{{ [None] }}", &sc), Ok(Some(json!([null]))));
}

#[test]
fn hostvars_localhost_is_the_implicit_controller_host() {
    let t = Templar::new();
    let sc = scope(&[
        ("inventory_hostname", json!("node-image")),
        ("site", json!("lab")),
    ]);
    let got = render(
        &t,
        "{{ hostvars['localhost']['ansible_connection'] }} {{ hostvars['localhost'].site }} {{ hostvars['localhost'].inventory_hostname }} {{ hostvars[inventory_hostname].inventory_hostname }}",
        &sc,
    );
    assert_eq!(got, Ok(Some(json!("local lab localhost node-image"))));
    let got = render(
        &t,
        "{{ ['localhost'] | map('extract', hostvars, 'ansible_connection') | list }} {{ [1, 0] | map('extract', ['x', 'y']) | join }} {{ 'a' | extract({'a': {'b': [5, 6]}}, ['b', 1]) }}",
        &sc,
    );
    assert_eq!(got, Ok(Some(json!("['local'] yx 6"))));
    let got = render(
        &t,
        "{{ 'k' | extract(nothing) | default('a') }}{{ 'k' | extract({'k': 1}, 'no') | default('b') }}{{ ('no' | extract(hostvars)).x | default('c') }}{{ ('localhost' | extract(hostvars, 'no')).x | default('d') }}{{ vars['no'].x | default('e') }}",
        &sc,
    );
    assert_eq!(got, Ok(Some(json!("abcde"))));
}

#[test]
fn file_and_unvault_lookups_open_a_vaulted_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = dir.path().join("roles/v/files");
    std::fs::create_dir_all(&files).expect("mkdir");
    std::fs::write(files.join("secret.yml"), crate::vault::fixtures::FILE11).expect("write");
    std::fs::write(files.join("plain.txt"), "plain\n").expect("write");
    crate::vault::set_process_vault(crate::vault::fixtures::vault("default"));
    lookups::set_search(dir.path(), vec![PathBuf::from("roles/v/files")]);
    let t = Templar::new();
    let sc = scope(&[]);
    assert_eq!(
        render(&t, "{{ lookup('unvault', 'secret.yml') }}", &sc),
        Ok(Some(json!("a: 1\nb: two\n")))
    );
    assert_eq!(
        render(&t, "{{ lookup('file', 'secret.yml') }}", &sc),
        Ok(Some(json!("a: 1\nb: two")))
    );
    assert_eq!(
        render(&t, "{{ lookup('unvault', 'plain.txt') }}", &sc),
        Ok(Some(json!("plain\n")))
    );
}

#[test]
fn mandatory_fails_in_ansibles_words_naming_the_variable() {
    let t = Templar::new();
    let sc = scope(&[("set", json!(1))]);
    let message = |text: &str| match render(&t, text, &sc) {
        Err(TemplateError::Other { message, .. }) => message,
        other => panic!("expected the filter's failure, got {other:?}"),
    };
    // Ansible 2.14's words, with their two spaces.
    assert!(message("{{ hey|mandatory }}").ends_with("Mandatory variable 'hey'  not defined."));
    assert!(message("{{ hey|mandatory('a sad wolf') }}").ends_with(": a sad wolf"));
    assert_eq!(render(&t, "{{ set|mandatory }}", &sc), Ok(Some(json!(1))));
}

#[test]
fn undef_fails_where_used_naming_its_hint_and_the_variable() {
    let t = Templar::new();
    let sc = scope(&[("fail_foo", json!("{{ undef('Expected failure') }}"))]);
    let out = render(&t, "{{ fail_foo }}", &sc);
    assert_eq!(
        out,
        Err(TemplateError::Undefined {
            name: "undef(\"Expected failure\")".into(),
            chain: vec!["fail_foo".into()]
        })
    );
}
