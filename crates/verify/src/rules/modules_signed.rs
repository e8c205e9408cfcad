//! `modules_signed`: for a Secure Boot site, every out-of-tree module of the pinned kernel
//! (MOFED's, NVIDIA's, every DKMS module) carries a signature by the site's certificate that
//! verifies against its key; a kernel enforcing signatures refuses any other. The kernel's own
//! modules keep the distribution's signatures and are not checked.

use super::rule::{kernel_or_skip, Rule, Verdict};
use crate::image::Image;
use crate::signature::{Mismatch, Signed};

/// The rule.
pub struct ModulesSigned;

/// The out-of-tree modules sorted by what their signature says.
#[derive(Default)]
struct Findings {
    good: usize,
    unsigned: Vec<String>,
    other_key: Vec<String>,
    broken: Vec<String>,
}

impl Rule for ModulesSigned {
    fn id(&self) -> &'static str {
        "modules_signed"
    }

    fn summary(&self) -> &'static str {
        "with a signing certificate given (`--signer-cert`, or the image's `io.imgbuild.module-signer-cert` label a build with the module-signing secret writes): every out-of-tree module of the pinned kernel carries a signature naming that certificate that verifies against its key (unsigned, another key's and broken signatures are named)"
    }

    fn check(&self, image: &Image) -> Verdict {
        let Some(cert) = &image.expect.signer_cert else {
            return Verdict::Skip(
                "no signing certificate given (--signer-cert FILE, the site's MOK certificate)"
                    .into(),
            );
        };
        let k = match kernel_or_skip(image) {
            Ok(k) => k,
            Err(skip) => return skip,
        };
        let mut found = Findings::default();
        for module in image.kernel_modules().filter(|m| m.out_of_tree()) {
            let path = module.path.clone();
            match module.info.map(|info| &info.signature) {
                Err(e) => found.broken.push(format!("{path} (unreadable: {e})")),
                Ok(Signed::Unsigned) => found.unsigned.push(path),
                Ok(Signed::Unreadable(why)) => found.broken.push(format!("{path} ({why})")),
                Ok(Signed::Signed(signature)) => match cert.check(signature) {
                    Ok(()) => found.good += 1,
                    Err(Mismatch::OtherKey(who)) => {
                        found.other_key.push(format!("{path} (signed by {who})"))
                    }
                    Err(Mismatch::Broken) => found
                        .broken
                        .push(format!("{path} (the signature does not verify)")),
                },
            }
        }
        verdict(&found, k, &cert.subject)
    }
}

fn verdict(found: &Findings, k: &str, subject: &str) -> Verdict {
    let mut wrong = Vec::new();
    let mut list = |what: &str, paths: &[String]| {
        if !paths.is_empty() {
            let shown: Vec<&String> = paths.iter().take(10).collect();
            wrong.push(format!("{} {what}: {shown:?}", paths.len()));
        }
    };
    list("unsigned", &found.unsigned);
    list("signed by another key", &found.other_key);
    list("with a broken signature", &found.broken);
    if wrong.is_empty() {
        return Verdict::Pass(format!(
            "all {} out-of-tree modules of {k} are signed by {subject}, each signature verified",
            found.good
        ));
    }
    Verdict::Fail(format!(
        "out-of-tree modules of {k} a kernel enforcing signatures refuses: {}; sign them with the site's key (DKMS mok_signing_key and mok_certificate, the installers' signing options, or the kernel's sign-file)",
        wrong.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use crate::image::Expect;
    use crate::modinfo::fake_module;
    use crate::report::verify;
    use crate::signature::SignerCert;
    use crate::signing_fixture::{sign, signing_key};
    use crate::snapshot::Snapshot;

    const K: &str = "6.1.0-50-amd64";

    fn add(s: &mut Snapshot, rel: &str, bytes: &[u8]) {
        s.add_file(
            &format!("/lib/modules/{K}/{rel}"),
            bytes.len() as u64,
            Some(bytes),
        )
        .expect("module");
    }

    fn module(name: &str, intree: bool) -> Vec<u8> {
        let vermagic = format!("{K} SMP preempt mod_unload modversions");
        let mut fields = vec![("name", name), ("vermagic", vermagic.as_str())];
        if intree {
            fields.push(("intree", "Y"));
        }
        fake_module(&fields)
    }

    fn outcome(s: &Snapshot, cert: &SignerCert) -> (bool, String) {
        let expect = Expect {
            signer_cert: Some(cert.clone()),
            ..Expect::default()
        };
        let report = verify(s, "x", &expect);
        let check = report
            .checks
            .iter()
            .find(|c| c.id == "modules_signed")
            .expect("the rule ran");
        (check.ok, check.detail.clone())
    }

    #[test]
    fn every_out_of_tree_module_must_carry_the_sites_verified_signature() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (key, site_pem) = signing_key(dir.path(), "site");
        let (other_key, other_pem) = signing_key(dir.path(), "other");
        let site = SignerCert::parse(&std::fs::read(&site_pem).expect("pem")).expect("cert");
        let mut s = Snapshot::default();
        s.add_file(&format!("/boot/vmlinuz-{K}"), 1, Some(&b"k"[..]))
            .expect("kernel");
        // The kernel's own module keeps the distribution's signature (none here): not checked.
        add(&mut s, "kernel/net/ipv6.ko", &module("ipv6", true));
        let signed = |name: &str| sign(&module(name, false), &key, &site_pem, &["-noattr"]);
        add(
            &mut s,
            "extra/mlnx-ofa_kernel/mlx5_core.ko",
            &signed("mlx5_core"),
        );
        add(&mut s, "updates/dkms/nvidia-current.ko", &signed("nvidia"));
        let (ok, detail) = outcome(&s, &site);
        assert!(ok, "{detail}");
        assert!(detail.contains("all 2 out-of-tree modules"), "{detail}");

        add(&mut s, "updates/dkms/stray.ko", &module("stray", false));
        let other = sign(
            &module("theirs", false),
            &other_key,
            &other_pem,
            &["-noattr"],
        );
        add(&mut s, "extra/theirs.ko", &other);
        let mut tampered = signed("tampered");
        tampered[70] ^= 1;
        add(&mut s, "extra/tampered.ko", &tampered);
        let (ok, detail) = outcome(&s, &site);
        assert!(!ok);
        for named in [
            "1 unsigned: [\"/lib/modules/6.1.0-50-amd64/updates/dkms/stray.ko\"]",
            "1 signed by another key: [\"/lib/modules/6.1.0-50-amd64/extra/theirs.ko (signed by CN=other module signing key",
            "1 with a broken signature: [\"/lib/modules/6.1.0-50-amd64/extra/tampered.ko (the signature does not verify)\"]",
        ] {
            assert!(detail.contains(named), "{named} in {detail}");
        }
    }
}
