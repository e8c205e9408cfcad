//! A site's network with real parts: an HTTPS server on 127.0.0.1 (rustls) with a certificate
//! from a throwaway CA made by `openssl` here, trusted through `SSL_CERT_FILE`,
//! a named CA file and a registry's `certs.d`, refused with a clear line when not; and a proxy
//! on 127.0.0.1 that counts what it forwards (plain requests and `CONNECT` tunnels), skipped
//! for `NO_PROXY` hosts. Needs `openssl` (CI installs it).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use net::{explain, Agents, Limits, ProxyEnv, Trust};

#[path = "../../../tests/support/counting_proxy.rs"]
mod counting_proxy;
#[path = "../../../tests/support/site_pki.rs"]
mod site_pki;
use counting_proxy::CountingProxy;

/// The CA and the certificates of mirror.test, localhost and 127.0.0.1.
fn make_certificates(dir: &Path) {
    site_pki::make_site_pki(dir, &["DNS:mirror.test", "DNS:localhost", "IP:127.0.0.1"]);
}

/// An HTTPS server on 127.0.0.1 (rustls, with the certificate openssl made) answering every
/// request with `body`, one thread per connection; its port.
fn https_server(dir: &Path, body: &'static str) -> u16 {
    https_server_asking(dir, body, false)
}

/// The same server, refusing clients without a certificate signed by the CA when
/// `client_certificates` says so.
fn https_server_asking(dir: &Path, body: &'static str, client_certificates: bool) -> u16 {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("srv.pem"))
        .expect("srv.pem")
        .collect::<Result<_, _>>()
        .expect("certificates");
    let key = PrivateKeyDer::from_pem_file(dir.join("srv.key")).expect("srv.key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("versions");
    let builder = if client_certificates {
        let mut roots = rustls::RootCertStore::empty();
        for ca in CertificateDer::pem_file_iter(dir.join("ca.pem")).expect("ca.pem") {
            roots.add(ca.expect("ca")).expect("root");
        }
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .expect("client verifier");
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let config = builder.with_single_cert(certs, key).expect("server config");
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let config = config.clone();
            std::thread::spawn(move || {
                let Ok(connection) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut tls = rustls::StreamOwned::new(connection, stream);
                answer(&mut tls, body);
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    port
}

/// Reads a request's whole head (so that closing after the answer resets nothing unread) and
/// answers it with `body`.
fn answer(stream: &mut (impl Read + Write), body: &str) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
        head.push(byte[0]);
    }
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// A plain HTTP server answering every request with `body`.
fn http_server(body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            answer(&mut stream, body);
        }
    });
    port
}

fn get(agents: &Agents, url: &str) -> Result<String, String> {
    let agent = agents.for_url(url).map_err(|e| e.message)?;
    match agent.get(url).call() {
        Ok(response) => response.into_string().map_err(|e| e.to_string()),
        Err(ureq::Error::Transport(t)) => Err(explain(&t, url)),
        Err(e) => Err(e.to_string()),
    }
}

#[test]
fn a_site_ca_and_proxy_are_honoured_as_podman_honours_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    make_certificates(dir.path());
    let port = https_server(dir.path(), "hello\n");
    let url = format!("https://127.0.0.1:{port}/hello.txt");
    let limits = Limits {
        read: Some(Duration::from_secs(10)),
        ..Limits::default()
    };
    let direct = ProxyEnv::default();

    // The public roots alone: one line naming the host and where to give the CA.
    let public = Agents::new(&Trust::default(), limits)
        .expect("agents")
        .with_proxies(direct.clone());
    let refused = get(&public, &url).expect_err("an unknown CA");
    assert!(
        refused.contains(&format!("127.0.0.1:{port} is not trusted")),
        "{refused}"
    );
    assert!(refused.contains("SSL_CERT_FILE"), "{refused}");

    // The CA named as a file.
    let ca = dir.path().join("ca.pem");
    let named = Trust::default().with_ca_file(&ca, "test");
    let agents = Agents::new(&named, limits)
        .expect("agents")
        .with_proxies(direct.clone());
    assert_eq!(get(&agents, &url).as_deref(), Ok("hello\n"));

    // SSL_CERT_FILE, as OpenSSL and Go read it (the only test of this binary sets it).
    std::env::set_var("SSL_CERT_FILE", &ca);
    let system = Agents::system(limits)
        .expect("agents")
        .with_proxies(direct.clone());
    assert_eq!(get(&system, &url).as_deref(), Ok("hello\n"));
    std::env::remove_var("SSL_CERT_FILE");

    // A registry's certs.d in the user's containers configuration.
    let home = dir.path().join("home");
    let certs_d = home.join(format!(".config/containers/certs.d/127.0.0.1:{port}"));
    std::fs::create_dir_all(&certs_d).expect("certs.d");
    std::fs::copy(&ca, certs_d.join("ca.crt")).expect("ca.crt");
    std::env::set_var("HOME", &home);
    let registry = Trust::system()
        .expect("trust")
        .with_certs_d(&format!("127.0.0.1:{port}"));
    let agents = Agents::new(&registry, limits)
        .expect("agents")
        .with_proxies(direct);
    assert_eq!(get(&agents, &url).as_deref(), Ok("hello\n"));

    // A proxy for http and one for https (a CONNECT tunnel), NO_PROXY going direct.
    let proxy = CountingProxy::start();
    let proxy_url = proxy.url();
    let plain = http_server("proxied\n");
    let env = ProxyEnv::new(Some(proxy_url.clone()), Some(proxy_url.clone()), "");
    let proxied = Agents::new(&named, limits)
        .expect("agents")
        .with_proxies(env);
    let through = format!("http://mirror.test:{plain}/file");
    assert_eq!(get(&proxied, &through).as_deref(), Ok("proxied\n"));
    assert_eq!(proxy.forwarded(), 1);
    let tunnel = format!("https://mirror.test:{port}/hello.txt");
    assert_eq!(get(&proxied, &tunnel).as_deref(), Ok("hello\n"));
    assert_eq!(proxy.forwarded(), 2);
    let loopback = format!("http://127.0.0.1:{plain}/file");
    assert_eq!(get(&proxied, &loopback).as_deref(), Ok("proxied\n"));
    assert_eq!(
        proxy.forwarded(),
        2,
        "loopback never goes through the proxy"
    );
    let excluded = ProxyEnv::new(Some(proxy_url.clone()), Some(proxy_url), "mirror.test");
    let bypass = Agents::new(&named, limits)
        .expect("agents")
        .with_proxies(excluded);
    assert!(
        get(&bypass, &through).is_err(),
        "mirror.test resolves nowhere but the proxy"
    );
    assert_eq!(proxy.forwarded(), 2);
}

/// A proxy that refuses every request with `status`; its port.
fn refusing_proxy(status: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let _ = write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
        }
    });
    port
}

#[test]
fn a_proxy_that_refuses_is_one_line_naming_the_host() {
    let limits = Limits {
        read: Some(Duration::from_secs(10)),
        ..Limits::default()
    };
    for status in ["403 Forbidden", "407 Proxy Authentication Required"] {
        let proxy = format!("http://127.0.0.1:{}", refusing_proxy(status));
        let agents = Agents::new(&Trust::default(), limits)
            .expect("agents")
            .with_proxies(ProxyEnv::new(None, Some(proxy), ""));
        let refused = get(&agents, "https://mirror.test:8443/x").expect_err("refused");
        assert!(
            refused.starts_with("the proxy for mirror.test:8443 refused"),
            "{status}: {refused}"
        );
        assert!(refused.contains("HTTPS_PROXY"), "{refused}");
        assert!(!refused.contains('\n'), "one line: {refused}");
    }
}

#[test]
fn a_client_certificate_from_certs_d_and_an_unverified_host() {
    let dir = tempfile::tempdir().expect("tempdir");
    make_certificates(dir.path());
    let port = https_server_asking(dir.path(), "for clients\n", true);
    let host = format!("127.0.0.1:{port}");
    let url = format!("https://{host}/file");
    let limits = Limits {
        read: Some(Duration::from_secs(10)),
        ..Limits::default()
    };
    let ca = dir.path().join("ca.pem");
    let agents = |trust: &Trust| {
        Agents::new(trust, limits)
            .expect("agents")
            .with_proxies(ProxyEnv::default())
    };

    // Without a client certificate the server ends the handshake: one line says where to
    // put one.
    let trusted = Trust::default().with_ca_file(&ca, "test");
    let refused = get(&agents(&trusted), &url).expect_err("no client certificate");
    assert!(refused.contains(&format!("{host} refused")), "{refused}");
    assert!(refused.contains("client.cert"), "{refused}");

    // certs.d/<host>/client.cert with client.key beside it, as containers/image reads them.
    let certs_d = dir.path().join("etc-containers").join(&host);
    std::fs::create_dir_all(&certs_d).expect("certs.d");
    std::fs::copy(&ca, certs_d.join("ca.crt")).expect("ca.crt");
    std::fs::copy(dir.path().join("client.cert"), certs_d.join("client.cert")).expect("cert");
    let only_cert = Trust::default()
        .with_ca_file(&certs_d.join("ca.crt"), "test")
        .with_client_certificate(&certs_d.join("client.cert"), &certs_d.join("client.key"));
    let missing_key = Agents::new(&only_cert, limits).expect_err("no key");
    assert!(
        missing_key.to_string().contains("client.key"),
        "{missing_key}"
    );
    // The key of another certificate: refused before any request, naming both files.
    std::fs::copy(dir.path().join("srv.key"), certs_d.join("client.key")).expect("key");
    let wrong_key = Agents::new(&only_cert, limits).expect_err("a key of another certificate");
    let wrong_key = wrong_key.to_string();
    assert!(wrong_key.contains("do not go together"), "{wrong_key}");
    assert!(
        wrong_key.contains("client.key") && !wrong_key.contains('\n'),
        "{wrong_key}"
    );
    std::fs::copy(dir.path().join("client.key"), certs_d.join("client.key")).expect("key");
    assert_eq!(
        get(&agents(&only_cert), &url).as_deref(),
        Ok("for clients\n")
    );

    // A host marked insecure: its unknown CA is taken, the client certificate still offered;
    // other hosts are verified as before.
    let unverified = Agents::new(&only_cert, limits)
        .expect("agents")
        .with_proxies(ProxyEnv::default())
        .without_verification_for(
            std::slice::from_ref(&host),
            &Trust::default()
                .with_client_certificate(&certs_d.join("client.cert"), &certs_d.join("client.key")),
            "the test",
        )
        .expect("unverified");
    assert_eq!(get(&unverified, &url).as_deref(), Ok("for clients\n"));
    let other = https_server(dir.path(), "verified\n");
    let public = Agents::new(&Trust::default(), limits)
        .expect("agents")
        .with_proxies(ProxyEnv::default())
        .without_verification_for(std::slice::from_ref(&host), &Trust::default(), "the test")
        .expect("unverified");
    let still_checked = get(&public, &format!("https://127.0.0.1:{other}/")).expect_err("verified");
    assert!(still_checked.contains("is not trusted"), "{still_checked}");
}
