//! A site's throwaway PKI for the tests, made by `openssl` at test time: a CA (`ca.pem`,
//! `ca.key`), a server certificate it signed for the names given (`srv.pem`, `srv.key`) and a
//! client certificate (`client.cert`, `client.key`).

use std::path::Path;
use std::process::{Command, Stdio};

fn openssl(dir: &Path, args: &[&str]) {
    let status = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stderr(Stdio::null())
        .status()
        .expect("openssl (apt-get install openssl)");
    assert!(status.success(), "openssl {args:?}");
}

/// Makes the CA and both certificates in `dir`; `names` are the server's subjectAltNames
/// (`DNS:mirror.test`, `IP:127.0.0.1`), the first one's value its common name.
pub fn make_site_pki(dir: &Path, names: &[&str]) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=imgbuild test site CA",
        ],
    );
    std::fs::write(
        dir.join("srv.cnf"),
        format!(
            "subjectAltName={}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
            names.join(",")
        ),
    )
    .expect("ext");
    std::fs::write(dir.join("client.cnf"), "extendedKeyUsage=clientAuth\n").expect("ext");
    let server = names
        .first()
        .and_then(|n| n.split_once(':'))
        .map_or("server", |(_, name)| name);
    for (name, subject, out) in [
        ("srv", server, "srv.pem"),
        ("client", "builder", "client.cert"),
    ] {
        let (key, csr, ext) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.cnf"),
        );
        let subject = format!("/CN={subject}");
        openssl(
            dir,
            &[
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj",
                &subject,
            ],
        );
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                out,
                "-days",
                "2",
                "-extfile",
                &ext,
            ],
        );
    }
}
