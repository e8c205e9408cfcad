//! Mirror credentials in a URL (`http://user:token@mirror/`) never reach the output, the
//! errors, the plan, the build report or the image; nor do vault passwords and the clear text
//! of vaulted values and files, which reach the image only. The builds need root and
//! debootstrap; the vault fixtures are made with `ansible-vault`.

use crate::common;

use std::path::Path;

use common::*;

const TOKEN: &str = "S3cr3t-m1rror-t0ken";

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn a_mirror_token_stays_out_of_output_reports_and_the_image() {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-secrets-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let project = work.path().join("project");
    copy_fixture("interrupts", &project);
    let cache = work.path().join("cache");
    shared_base_cache(&cache);
    let served = work.path().join("mirror");
    std::fs::create_dir_all(&served).expect("mkdir");
    std::fs::write(served.join("slow.bin"), b"the artifact\n").expect("write");
    let base = serve_dir(&served);
    let mirror = base.replacen("http://", &format!("http://bot:{TOKEN}@"), 1);
    let out = work.path().join("out");
    let env = [
        ("IMGBUILD_CACHE", cache.as_path()),
        ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
    ];
    let out_arg = out.to_string_lossy().into_owned();
    let build = |marker: &str| {
        imgbuild_env(
            &project,
            &[
                "build",
                "slow",
                "--no-verify",
                "--out",
                &out_arg,
                "--mirror",
                &mirror,
                "-e",
                "download=true",
                "-e",
                marker,
            ],
            &env,
        )
    };

    let built = build("marker=secret-one");
    assert!(built.status.success(), "{}", stderr(&built));
    assert!(!contains(&built.stdout, TOKEN) && !contains(&built.stderr, TOKEN));
    for file in [
        "report.json",
        "report.md",
        "slow.tar",
        "sbom.cdx.json",
        "provenance.json",
        "timeline.svg",
    ] {
        let bytes = std::fs::read(out.join("slow").join(file)).expect(file);
        assert!(!contains(&bytes, TOKEN), "the token is in {file}");
    }
    for args in [
        vec!["plan", "slow", "--mirror", &mirror, "-e", "download=true"],
        vec![
            "--json",
            "plan",
            "slow",
            "--mirror",
            &mirror,
            "-e",
            "download=true",
        ],
    ] {
        let plan = imgbuild_env(&project, &args, &env);
        assert!(plan.status.success(), "{}", stderr(&plan));
        assert!(
            stdout(&plan).contains("bot:***@"),
            "the URL is shown, redacted"
        );
        assert!(!contains(&plan.stdout, TOKEN), "the token is in the plan");
    }

    // A failing download: the error names the URL without the token.
    std::fs::remove_file(served.join("slow.bin")).expect("rm");
    std::fs::remove_dir_all(cache.join("downloads")).expect("forget the download");
    let failed = build("marker=secret-two");
    assert_eq!(failed.status.code(), Some(1));
    assert!(stderr(&failed).contains("slow.bin"), "{}", stderr(&failed));
    assert!(
        !contains(&failed.stdout, TOKEN) && !contains(&failed.stderr, TOKEN),
        "{}",
        stderr(&failed)
    );
}

// ansible-vault: vaulted values and files, made by the real `ansible-vault` (Debian's ansible)
// at test time, decrypt as Ansible decrypts them and never show.

const DB: &str = "CLEAR-db-value-1";
const API_TOKEN: &str = "CLEAR-api-token-2";
const SITE: &str = "CLEAR-site-secret-3";
const FILE_TEXT: &str = "CLEAR-file-line-4";
const PW_DEFAULT: &str = "pw-default-7x";
const PW_PROD: &str = "pw-prod-9y";
const CLEAR: [&str; 6] = [DB, API_TOKEN, SITE, FILE_TEXT, PW_DEFAULT, PW_PROD];

fn ansible_vault(args: &[&str]) -> String {
    let out = std::process::Command::new("ansible-vault")
        .args(args)
        .output()
        .expect("ansible-vault (Debian's ansible package) runs");
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A project whose role uses a 1.1 value (label default), a 1.2 value (label prod), a whole
/// vaulted vars file and a vaulted `copy` source; its password files `pw` and `pw-prod`.
fn vaulted_project(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let pw = root.join("pw");
    let pw_prod = root.join("pw-prod");
    write(&pw, &format!("{PW_DEFAULT}\n"));
    write(&pw_prod, PW_PROD);
    let (pw_arg, prod_arg) = (
        pw.display().to_string(),
        format!("prod@{}", pw_prod.display()),
    );
    let project = root.join("project");
    write(
        &project.join("images/vaulted.yml"),
        "- name: vaulted.yml\n  hosts: localhost\n  vars:\n    bootstrap: debootstrap\n    build_from: bookworm\n    image_name: vaulted\n    kernel_version: \"6.1.0-50-amd64\"\n  vars_files: [vars/site.yml]\n  roles: [vaulted]\n",
    );
    let site = project.join("images/vars/site.yml");
    write(&site, &format!("site_secret: {SITE}\n"));
    ansible_vault(&[
        "encrypt",
        "--vault-password-file",
        &pw_arg,
        &site.to_string_lossy(),
    ]);
    let role = project.join("roles/vaulted");
    let defaults = ansible_vault(&[
        "encrypt_string",
        "--vault-password-file",
        &pw_arg,
        DB,
        "--name",
        "db_password",
    ]);
    write(&role.join("defaults/main.yml"), &defaults);
    let vars = ansible_vault(&[
        "encrypt_string",
        "--vault-id",
        &prod_arg,
        API_TOKEN,
        "--name",
        "api_token",
    ]);
    write(&role.join("vars/main.yml"), &vars);
    let file = role.join("files/secret.conf");
    write(&file, &format!("{FILE_TEXT}\n"));
    ansible_vault(&[
        "encrypt",
        "--vault-password-file",
        &pw_arg,
        &file.to_string_lossy(),
    ]);
    write(
        &role.join("tasks/main.yml"),
        &format!(
            "- name: the values decrypt to what was vaulted\n  fail: {{msg: wrong clear text}}\n  when: db_password != '{DB}' or api_token != '{API_TOKEN}' or site_secret != '{SITE}'\n- name: write them\n  copy: {{content: \"{{{{ db_password }}}} {{{{ api_token }}}} {{{{ site_secret }}}}\\n\", dest: /srv/secrets}}\n- name: a vaulted file\n  copy: {{src: secret.conf, dest: /srv/secret.conf, mode: \"0600\"}}\n- name: say it\n  debug: {{msg: \"token is {{{{ api_token }}}}\"}}\n"
        ),
    );
    (pw, pw_prod)
}

fn assert_clean(what: &str, bytes: &[u8]) {
    for clear in CLEAR {
        assert!(!contains(bytes, clear), "{clear} is in {what}");
    }
}

#[test]
fn vaulted_values_plan_and_never_show() {
    let work = tempfile::tempdir().expect("work dir");
    let (pw, pw_prod) = vaulted_project(work.path());
    let project = work.path().join("project");
    let (pw, prod) = (
        pw.display().to_string(),
        format!("prod@{}", pw_prod.display()),
    );
    let with_passwords = |extra: &[&str]| {
        let mut args = extra.to_vec();
        args.extend([
            "plan",
            "vaulted",
            "--vault-password-file",
            &pw,
            "--vault-id",
            &prod,
        ]);
        imgbuild(&project, &args)
    };
    for json in [&["--json"][..], &[][..]] {
        let plan = with_passwords(json);
        assert!(plan.status.success(), "{}", stderr(&plan));
        assert_clean("the plan", &plan.stdout);
        assert_clean("the plan's warnings", &plan.stderr);
        assert!(stdout(&plan).contains("<vault:"), "{}", stdout(&plan));
    }

    // ANSIBLE_VAULT_PASSWORD_FILE is a --vault-password-file, as for Ansible.
    let env = [("ANSIBLE_VAULT_PASSWORD_FILE", Path::new(&pw))];
    let from_env = imgbuild_env(&project, &["plan", "vaulted", "--vault-id", &prod], &env);
    assert!(from_env.status.success(), "{}", stderr(&from_env));

    // No password: exit 2, the file and line, and what to pass.
    let none = imgbuild(&project, &["plan", "vaulted"]);
    assert_eq!(none.status.code(), Some(2), "{}", stderr(&none));
    let message = stderr(&none);
    assert!(message.contains("images/vars/site.yml:1:"), "{message}");
    assert!(message.contains("--vault-password-file"), "{message}");

    // A wrong password: one line, exit 2, Ansible's words, no secret.
    let wrong = work.path().join("wrong");
    write(&wrong, "not-the-password");
    let failed = imgbuild(
        &project,
        &[
            "plan",
            "vaulted",
            "--vault-password-file",
            &wrong.to_string_lossy(),
        ],
    );
    assert_eq!(failed.status.code(), Some(2), "{}", stderr(&failed));
    let message = stderr(&failed);
    assert_eq!(message.trim_end().lines().count(), 1, "{message}");
    assert!(message.contains("Decryption failed"), "{message}");
    assert!(!message.contains("not-the-password"), "{message}");
    assert_clean("the error", &failed.stderr);

    // The prod value with the default password only: Ansible tries it too, and it is wrong.
    let no_prod = imgbuild(&project, &["plan", "vaulted", "--vault-password-file", &pw]);
    assert_eq!(no_prod.status.code(), Some(2), "{}", stderr(&no_prod));
    assert!(
        stderr(&no_prod).contains("roles/vaulted/vars/main.yml:1:"),
        "{}",
        stderr(&no_prod)
    );
}

#[test]
fn a_vaulted_build_writes_clear_text_only_into_the_image() {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-vault-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let (pw, pw_prod) = vaulted_project(work.path());
    let project = work.path().join("project");
    let cache = work.path().join("cache");
    shared_base_cache(&cache);
    let out = work.path().join("out");
    let env = [
        ("IMGBUILD_CACHE", cache.as_path()),
        ("SOURCE_DATE_EPOCH", Path::new("1700000000")),
        ("ANSIBLE_VAULT_PASSWORD_FILE", pw.as_path()),
    ];
    let (out_arg, prod) = (
        out.to_string_lossy().into_owned(),
        format!("prod@{}", pw_prod.display()),
    );
    let build = || {
        imgbuild_env(
            &project,
            &[
                "--json",
                "build",
                "vaulted",
                "--no-verify",
                "--format",
                "chroot",
                "--out",
                &out_arg,
                "--vault-id",
                &prod,
            ],
            &env,
        )
    };
    let built = build();
    assert!(built.status.success(), "{}", stderr(&built));
    assert_clean("the build's output", &built.stdout);
    assert_clean("the build's log", &built.stderr);
    for file in ["report.json", "report.md"] {
        let bytes = std::fs::read(out.join("vaulted").join(file)).expect(file);
        assert_clean(file, &bytes);
    }
    let rootfs = out.join("vaulted/rootfs");
    let written = std::fs::read_to_string(rootfs.join("srv/secrets")).expect("secrets");
    assert_eq!(written, format!("{DB} {API_TOKEN} {SITE}\n"));
    let copied = std::fs::read_to_string(rootfs.join("srv/secret.conf")).expect("copied");
    assert_eq!(copied, format!("{FILE_TEXT}\n"));

    // The layer's key holds the values' markers: the same vault text builds from the cache.
    let again = build();
    assert!(again.status.success(), "{}", stderr(&again));
    let layer = |output: &std::process::Output| {
        stdout(output)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|e| e["event"] == "layer" && e["role"] == "vaulted")
            .expect("the role's layer event")
    };
    assert_eq!(layer(&again)["cached"], true, "{}", stdout(&again));
}
