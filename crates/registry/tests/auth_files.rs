//! Credentials where podman keeps them, read in its order, with namespaced keys and a
//! credential helper run as podman runs it. One test: it sets the environment of its process.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use base64::Engine;
use registry::Credentials;

fn auth(user: &str, password: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

#[test]
fn credentials_are_found_where_podman_finds_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let runtime = dir.path().join("run");
    for (k, v) in [("HOME", &home), ("XDG_RUNTIME_DIR", &runtime)] {
        std::env::set_var(k, v);
    }
    for k in ["REGISTRY_AUTH_FILE", "XDG_CONFIG_HOME", "DOCKER_CONFIG"] {
        std::env::remove_var(k);
    }
    assert!(Credentials::for_reference("registry.site", "hpc/rocky")
        .expect("ok")
        .is_none());

    // ~/.docker/config.json, then ~/.config/containers/auth.json before it.
    write(
        &home.join(".docker/config.json"),
        &format!(
            r#"{{"auths": {{"registry.site": {{"auth": "{}"}}}}}}"#,
            auth("docker", "d")
        ),
    );
    let found = Credentials::for_reference("registry.site", "hpc/rocky").expect("ok");
    assert_eq!(found.map(|c| c.username).as_deref(), Some("docker"));
    write(
        &home.join(".config/containers/auth.json"),
        &format!(
            r#"{{"auths": {{"registry.site/hpc": {{"auth": "{}"}}, "registry.site": {{"auth": "{}"}}}}}}"#,
            auth("team", "t"),
            auth("site", "s")
        ),
    );
    let namespaced = Credentials::for_reference("registry.site", "hpc/rocky").expect("ok");
    assert_eq!(namespaced.map(|c| c.username).as_deref(), Some("team"));
    let other = Credentials::for_reference("registry.site", "apps/x").expect("ok");
    assert_eq!(other.map(|c| c.username).as_deref(), Some("site"));

    // $XDG_RUNTIME_DIR/containers/auth.json comes first, with a credential helper.
    let bin = dir.path().join("bin");
    let helper = bin.join("docker-credential-site");
    write(
        &helper,
        "#!/bin/sh\nread host\n[ \"$host\" = helped.site ] || { echo 'credentials not found in native keychain'; exit 1; }\n\
         echo '{\"ServerURL\": \"helped.site\", \"Username\": \"robot\", \"Secret\": \"hunter2\"}'\n",
    );
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::set_var("PATH", format!("{}:{path}", bin.display()));
    write(
        &runtime.join("containers/auth.json"),
        r#"{"auths": {}, "credHelpers": {"helped.site": "site"}}"#,
    );
    let helped = Credentials::for_reference("helped.site", "x")
        .expect("ok")
        .expect("found");
    assert_eq!(helped.username, "robot");
    assert!(!format!("{helped:?}").contains("hunter2"));
    // The helper has none for registry.site: the next file's answer stands.
    write(
        &runtime.join("containers/auth.json"),
        r#"{"auths": {}, "credsStore": "site"}"#,
    );
    let fallback = Credentials::for_reference("registry.site", "hpc/rocky").expect("ok");
    assert_eq!(fallback.map(|c| c.username).as_deref(), Some("team"));

    // REGISTRY_AUTH_FILE, when set, is the only file read.
    let only = dir.path().join("only.json");
    write(&only, r#"{"auths": {}}"#);
    std::env::set_var("REGISTRY_AUTH_FILE", &only);
    assert!(Credentials::for_reference("registry.site", "hpc/rocky")
        .expect("ok")
        .is_none());
}
