//! Debian's docker-registry on 127.0.0.1 for the tests, with or without token auth (a token
//! service of the tests' own, `fixtures/registry/token_server.py`), stopped with the test.

#![allow(dead_code)]

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::repo_root;

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

pub fn wait_for_port(port: u16, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("the server on port {port} exited ({status}): {err}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing listens on port {port} after 30 s");
}

/// A docker-registry (and its token service) that stops with the test.
pub struct Registry {
    /// `127.0.0.1:PORT`.
    pub host: String,
    /// Its storage folder.
    pub data: PathBuf,
    children: Vec<Child>,
    _dir: tempfile::TempDir,
}

impl Drop for Registry {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub const USER: &str = "builder";
pub const PASSWORD: &str = "c0rrect-h0rse-battery";

pub fn start_registry(token_auth: bool) -> Registry {
    start_registry_with(token_auth, None, "127.0.0.1")
}

/// HTTPS for a registry: its certificate and key, and the CA its clients' certificates must
/// come from.
pub struct RegistryTls {
    pub certificate: PathBuf,
    pub key: PathBuf,
    pub client_ca: PathBuf,
}

/// A registry with or without token auth, speaking HTTPS when `tls` says how; its token
/// service is named by `token_host` in the challenge (a name only a proxy resolves, or
/// 127.0.0.1).
pub fn start_registry_with(
    token_auth: bool,
    tls: Option<&RegistryTls>,
    token_host: &str,
) -> Registry {
    let dir = tempfile::tempdir().expect("registry dir");
    let port = free_port();
    let mut children = Vec::new();
    let mut auth = String::new();
    if token_auth {
        let (key, cert) = (dir.path().join("key.pem"), dir.path().join("cert.pem"));
        let status = Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=imgbuild-test-token",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stderr(Stdio::null())
            .status()
            .expect("openssl");
        assert!(status.success(), "openssl req failed");
        let token_port = free_port();
        let mut token = Command::new("python3")
            .arg(repo_root().join("tests/fixtures/registry/token_server.py"))
            .arg(token_port.to_string())
            .arg(&key)
            .arg(&cert)
            .args(["imgbuild-test-issuer", USER, PASSWORD])
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 runs the token service");
        wait_for_port(token_port, &mut token);
        children.push(token);
        auth = format!(
            "auth:\n  token:\n    realm: http://{token_host}:{token_port}/token\n    service: imgbuild-test\n    issuer: imgbuild-test-issuer\n    rootcertbundle: {}\n",
            cert.display()
        );
    }
    let tls = tls.map_or(String::new(), |tls| {
        format!(
            "  tls:\n    certificate: {}\n    key: {}\n    clientcas:\n      - {}\n",
            tls.certificate.display(),
            tls.key.display(),
            tls.client_ca.display()
        )
    });
    let config = dir.path().join("config.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  delete:\n    enabled: true\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n{tls}{auth}",
            dir.path().join("data").display()
        ),
    )
    .expect("config");
    let mut registry = Command::new("docker-registry")
        .arg("serve")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("docker-registry runs (apt-get install docker-registry)");
    wait_for_port(port, &mut registry);
    children.push(registry);
    Registry {
        host: format!("127.0.0.1:{port}"),
        data: dir.path().join("data"),
        children,
        _dir: dir,
    }
}

/// A REGISTRY_AUTH_FILE for `host` with the test user and `password`.
pub fn auth_file(dir: &Path, host: &str, password: &str) -> PathBuf {
    use base64::Engine;
    let path = dir.join("auth.json");
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{password}"));
    std::fs::write(&path, json!({"auths": {host: {"auth": auth}}}).to_string()).expect("auth file");
    path
}
