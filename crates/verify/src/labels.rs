//! What verify makes of an image's labels (`spec::ImageLabels`, which the build writes): what
//! it holds the image to, and the labels naming a signing certificate.

use spec::ImageLabels;

use crate::image::Expect;
use crate::signature::SignerCert;

impl Expect {
    /// What verify holds the image to, from its labels alone.
    pub fn of_labels(labels: &ImageLabels) -> Self {
        Self {
            kernel: labels.kernel.clone(),
            mofed: labels.mofed.clone(),
            doca: labels.doca.clone(),
            nvidia: labels.nvidia.clone(),
            nvidia_flavor: labels.nvidia_flavor,
            initramfs: labels.initramfs,
            allow_opensm: labels.allow_opensm,
            no_build_tools: labels.no_build_tools,
            // A label that does not read as a certificate turns the rule on with nothing to
            // match: every module then fails it, which is what a damaged label deserves.
            signer_cert: labels.module_signer_cert.as_deref().map(|b64| {
                SignerCert::parse(pem_of(b64).as_bytes())
                    .unwrap_or_else(|_| SignerCert::unreadable(b64))
            }),
        }
    }
}

/// `labels` naming `cert` as the modules' signer.
pub fn signed_by(labels: ImageLabels, cert: &SignerCert) -> ImageLabels {
    labels.with_signer(&cert.fingerprint, &cert.der)
}

/// A certificate label's base64 as PEM (64 characters a line), which `SignerCert` reads.
fn pem_of(b64: &str) -> String {
    let body: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .filter_map(|line| std::str::from_utf8(line).ok())
        .collect();
    format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        body.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use spec::labels::{MODULE_SIGNER, MODULE_SIGNER_CERT};

    #[test]
    fn labels_hold_the_image_to_what_they_promise() {
        let labels = ImageLabels {
            kernel: Some("6.1.0-50-amd64".into()),
            nvidia_flavor: Some(spec::NvidiaFlavor::Open),
            allow_opensm: true,
            ..ImageLabels::default()
        };
        let expect = Expect::of_labels(&labels);
        assert_eq!(expect.kernel.as_deref(), Some("6.1.0-50-amd64"));
        assert_eq!(expect.nvidia_flavor, Some(spec::NvidiaFlavor::Open));
        assert!(expect.allow_opensm && !expect.initramfs && expect.signer_cert.is_none());
    }

    #[test]
    fn the_signer_label_carries_the_certificate_verify_checks_with() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_, cert) = crate::signing_fixture::signing_key(dir.path(), "labels");
        let pem = std::fs::read(cert).expect("cert");
        let cert = crate::signature::SignerCert::parse(&pem).expect("parse");
        let built = signed_by(ImageLabels::default(), &cert);
        let written = built.write();
        assert_eq!(
            written[MODULE_SIGNER],
            format!("sha256:{}", cert.fingerprint)
        );
        assert!(!written[MODULE_SIGNER_CERT].contains('\n'));
        // The same base64 as PEM's body (openssl's own encoder).
        let body: String = String::from_utf8_lossy(&pem)
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect();
        assert_eq!(written[MODULE_SIGNER_CERT], body);
        let read = ImageLabels::read(&written);
        assert_eq!(read, built);
        assert_eq!(Expect::of_labels(&read).signer_cert, Some(cert));
        let damaged = ImageLabels {
            module_signer_cert: Some("AAAA".into()),
            ..read
        };
        let unreadable = Expect::of_labels(&damaged).signer_cert.expect("still on");
        assert!(
            unreadable.subject.contains("unreadable"),
            "{}",
            unreadable.subject
        );
    }
}
