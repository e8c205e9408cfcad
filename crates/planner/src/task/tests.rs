use super::*;
use crate::yaml::parse;
use serde_json::json;

fn parse_one(text: &str) -> Result<()> {
    let node = parse(text).expect("yaml");
    parse_task(&node, Path::new("t.yml"), &|_| false)
        .and_then(|def| def.refused.map_or(Ok(()), Err))
}

fn included_file(text: &str) -> Result<Json> {
    let node = parse(text).expect("yaml");
    match parse_task(&node, Path::new("t.yml"), &|_| false)?.action {
        Action::Include { file, .. } => Ok(file),
        _ => panic!("not an include"),
    }
}

#[test]
fn include_free_form_with_an_equals_sign_is_key_value_as_in_ansible() {
    assert_eq!(
        included_file("include_tasks: \"{{ os }}.yml\"\n").expect("plain"),
        json!("{{ os }}.yml")
    );
    assert_eq!(
        included_file("include_tasks: file=x.yml\n").expect("file="),
        json!("x.yml")
    );
    let refused = included_file("include_tasks: \"{{ 'a.yml' if x == 'y' else 'b.yml' }}\"\n")
        .expect_err("ansible-playbook refuses it");
    assert!(refused.to_string().contains("write the file under `file:`"));
    assert!(refused.to_string().contains("t.yml:1"), "{refused}");
    let mapped = "include_tasks:\n  file: \"{{ 'a.yml' if x == 'y' else 'b.yml' }}\"\n";
    assert!(included_file(mapped).is_ok());
}

#[test]
fn free_form_command_takes_out_its_words() {
    let args = parse_command(
        "chdir=/tmp ./mlnxofedinstall --kernel 5.14 creates=/x",
        crate::modules::command::FREE_FORM_KEYS,
    )
    .expect("splits");
    assert_eq!(args["chdir"], json!("/tmp"));
    assert_eq!(args["creates"], json!("/x"));
    assert_eq!(args["cmd"], json!("./mlnxofedinstall --kernel 5.14"));
    let args = parse_command("echo 'a  b' | tr a b", &[]).expect("splits");
    assert_eq!(args["cmd"], json!("echo 'a  b' | tr a b"));
}

#[test]
fn key_value_words_keep_jinja_whole_and_decode_escapes() {
    let args = parse_key_values(
        "dest={{ base_dir }}/x mode={{ m | default('0644') }} content=\"a\\nb\" name={{ item }}",
    )
    .expect("key=value");
    assert_eq!(args["dest"], "{{ base_dir }}/x");
    assert_eq!(args["mode"], "{{ m | default('0644') }}");
    assert_eq!(args["content"], "a\nb");
    assert_eq!(args["name"], "{{ item }}");
}

#[test]
fn key_value_words() {
    let args = parse_key_values("path=/etc/x state=directory mode='0755'").expect("kv");
    assert_eq!(args["mode"], json!("0755"));
    assert_eq!(parse_key_values("path=/x oops").expect_err("bad"), "oops");
}

#[test]
fn task_shapes() {
    assert!(parse_one("name: x\nshell: echo\n").is_ok());
    assert!(parse_one("name: x\nansible.builtin.copy: {src: a, dest: /b}\n").is_ok());
    assert!(parse_one("block:\n  - shell: x\nrescue:\n  - shell: y\n").is_ok());
    let err = parse_one("name: x\nshel: echo\n")
        .expect_err("typo")
        .to_string();
    assert!(
        err.contains("t.yml:2") && err.contains("did you mean 'shell'"),
        "{err}"
    );
    let err = parse_one("shell: a\ncommand: b\n")
        .expect_err("two")
        .to_string();
    assert!(err.contains("two modules"), "{err}");
    let err = parse_one("name: only a name\n")
        .expect_err("none")
        .to_string();
    assert!(err.contains("no module"), "{err}");
    let err = parse_one("shell: a\nlocal_action: command b\n")
        .expect_err("unsupported")
        .to_string();
    assert!(err.contains("not supported"), "{err}");
}

#[test]
fn a_roles_own_module_is_planned_with_its_arguments_as_written() {
    let node = parse("site_probe: name=hostname verbose=yes\n").expect("yaml");
    // The predicate gets the name as written (the planner's finder takes `ansible.legacy.`).
    let is_own = |name: &str| name.trim_start_matches("ansible.legacy.") == "site_probe";
    for text in ["site_probe", "ansible.legacy.site_probe"] {
        let node = parse(&format!("{text}: name=hostname verbose=yes\n")).expect("yaml");
        match parse_task(&node, Path::new("t.yml"), &is_own)
            .expect("planned")
            .action
        {
            Action::Module { spec, args, .. } => {
                assert_eq!(spec.name, crate::modules::role_module::MODULE);
                assert_eq!(
                    Json::Object(args),
                    json!({"module": "site_probe", "args": {"name": "hostname", "verbose": "yes"}})
                );
            }
            _ => panic!("{text}: not a module"),
        }
    }
    // Without it in the role's library the name is an unknown module, as before.
    let err = parse_task(&node, Path::new("t.yml"), &|_| false).expect_err("unknown");
    assert!(err.to_string().contains("site_probe"), "{err}");
    let collection = parse("community.general.site_probe: {}\n").expect("yaml");
    assert!(parse_task(&collection, Path::new("t.yml"), &is_own).is_err());
}
