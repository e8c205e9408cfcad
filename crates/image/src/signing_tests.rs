use super::*;
use verify::signing_fixture::signing_key;

/// A secret folder with a fresh key pair named `key_name` and `cert_name`.
fn secret(key_name: &str, cert_name: &str) -> (tempfile::TempDir, PathBuf) {
    let made = tempfile::tempdir().expect("tempdir");
    let (key, cert) = signing_key(made.path(), "site");
    let dir = made.path().join("secret");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::rename(key, dir.join(key_name)).expect("key");
    std::fs::rename(cert, dir.join(cert_name)).expect("cert");
    (made, dir)
}

fn key_body(dir: &Path, name: &str) -> String {
    let pem = std::fs::read_to_string(dir.join(name)).expect("key");
    pem.lines().nth(1).expect("a body line").to_owned()
}

#[test]
fn a_key_and_its_certificate_load_under_each_accepted_name() {
    for (key, cert) in [
        ("key.pem", "cert.pem"),
        ("mok.key", "mok.pub"),
        ("MOK.priv", "MOK.der"),
    ] {
        let (_made, dir) = secret(key, cert);
        if cert.ends_with(".der") || cert == "mok.pub" {
            let out = std::process::Command::new("openssl")
                .args(["x509", "-outform", "DER", "-in"])
                .arg(dir.join(cert))
                .arg("-out")
                .arg(dir.join(cert))
                .output()
                .expect("openssl x509");
            assert!(out.status.success(), "{out:?}");
        }
        let signing = ModuleSigning::load(&dir).unwrap_or_else(|e| panic!("{key}/{cert}: {e}"));
        assert_eq!(signing.fingerprint().len(), "sha256:".len() + 64);
        // Nothing the build prints or keys holds the key.
        let shown = format!("{signing:?}");
        assert!(!shown.contains(&key_body(&dir, key)), "{shown}");
    }
}

#[test]
fn bad_secrets_are_refused_naming_the_file_and_what_to_do() {
    let missing = ModuleSigning::load(Path::new("/nonexistent/secret")).expect_err("no dir");
    assert!(
        missing.to_string().contains("/nonexistent/secret"),
        "{missing}"
    );

    let (_made, dir) = secret("key.pem", "cert.pem");
    std::fs::remove_file(dir.join("cert.pem")).expect("rm");
    let no_cert = ModuleSigning::load(&dir).expect_err("no cert").to_string();
    assert!(
        no_cert.contains("no certificate") && no_cert.contains("cert.pem"),
        "{no_cert}"
    );

    let (_made, dir) = secret("key.pem", "cert.pem");
    std::fs::copy(dir.join("key.pem"), dir.join("mok.key")).expect("copy");
    let two = ModuleSigning::load(&dir).expect_err("two keys").to_string();
    assert!(two.contains("2 files could be the private key"), "{two}");

    // A key that is not the certificate's: named, without its bytes.
    let (_made, dir) = secret("key.pem", "cert.pem");
    let (_other, other_dir) = secret("key.pem", "cert.pem");
    std::fs::copy(other_dir.join("key.pem"), dir.join("key.pem")).expect("copy");
    let wrong = ModuleSigning::load(&dir)
        .expect_err("other key")
        .to_string();
    assert!(
        wrong.contains(&dir.join("key.pem").display().to_string()),
        "{wrong}"
    );
    assert!(wrong.contains("not the certificate's"), "{wrong}");
    assert!(!wrong.contains(&key_body(&dir, "key.pem")), "{wrong}");

    // The key given where the certificate goes.
    let (_made, dir) = secret("key.pem", "cert.pem");
    std::fs::copy(dir.join("key.pem"), dir.join("cert.pem")).expect("copy");
    let swapped = ModuleSigning::load(&dir)
        .expect_err("a key as cert")
        .to_string();
    assert!(
        swapped.contains("cert.pem") && swapped.contains("certificate"),
        "{swapped}"
    );
    assert!(!swapped.contains(&key_body(&dir, "key.pem")), "{swapped}");
}

#[test]
fn the_key_is_never_written_where_the_layer_is_read_from() {
    let (_made, dir) = secret("key.pem", "cert.pem");
    let signing = ModuleSigning::load(&dir).expect("load");
    // A plain folder: its /run is the rootfs's own folder, so the key would be in the layer.
    let root = tempfile::tempdir().expect("root");
    std::fs::create_dir(root.path().join("run")).expect("run");
    let fs = RootFs::plain(root.path()).expect("rootfs");
    let refused = signing.install("mofed", &fs).expect_err("refused");
    assert!(refused.to_string().contains("overlayfs"), "{refused}");
    assert!(!root.path().join("run/imgbuild").exists());
}

fn plan_with(roles: &[&str], listed: Option<serde_json::Value>) -> Plan {
    let mut vars = indexmap::IndexMap::new();
    if let Some(listed) = listed {
        vars.insert(ROLES_VAR.to_owned(), listed);
    }
    Plan {
        image: "i".into(),
        recipe: "images/i.yml".into(),
        intent: Default::default(),
        facts: Default::default(),
        vars,
        roles: roles.iter().map(|r| (*r).to_owned()).collect(),
        tasks: Vec::new(),
        handlers: Vec::new(),
        warnings: Vec::new(),
        missing_handlers: Vec::new(),
        inputs: Vec::new(),
    }
}

#[test]
fn the_roles_that_build_modules_are_mofed_and_nvidia_unless_the_recipe_lists_others() {
    let roles = [
        "common/bootstrap",
        "kernel",
        "mofed",
        "site/nvidia",
        "dracut",
    ];
    assert_eq!(
        signing_roles(&plan_with(&roles, None)),
        ["mofed", "site/nvidia"]
    );
    let listed = serde_json::json!(["kernel", "dracut"]);
    assert_eq!(
        signing_roles(&plan_with(&roles, Some(listed))),
        ["kernel", "dracut"]
    );
    let text = serde_json::json!("mofed, common/bootstrap");
    assert_eq!(
        signing_roles(&plan_with(&roles, Some(text))),
        ["common/bootstrap", "mofed"]
    );
    assert!(signing_roles(&plan_with(&roles, Some(serde_json::json!([])))).is_empty());
}
