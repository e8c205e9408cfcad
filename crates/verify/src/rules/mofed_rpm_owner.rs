//! `mofed_rpm_owner`: in an image with an rpm database, MOFED's modules belong to a package (the
//! kmod packages `mlnxofedinstall --add-kernel-support` builds and installs), as `rpm -qf`
//! says: modules copied in by hand are invisible to rpm, dnf and a later MOFED upgrade.

use std::collections::{BTreeMap, BTreeSet};

use super::rule::{and_kernel, mofed_or_skip, Rule, Verdict};
use crate::image::{Image, MOFED_MODULES};
use crate::rpmdb;

/// The rule.
pub struct MofedRpmOwner;

/// The package that owns `path` (rpm lists `/lib/...`; a merged-usr image may say either).
fn owner<'o>(owners: &'o BTreeMap<String, String>, path: &str) -> Option<&'o String> {
    let bare = path.strip_prefix("/usr").unwrap_or(path);
    owners
        .get(bare)
        .or_else(|| owners.get(&format!("/usr{bare}")))
}

impl Rule for MofedRpmOwner {
    fn id(&self) -> &'static str {
        "mofed_rpm_owner"
    }

    fn summary(&self) -> &'static str {
        "with MOFED in an image that has an rpm database (Rocky): each MOFED module `modprobe` loads is owned by a package (`rpm -qf`), such as the `kmod-mlnx-ofa_kernel` that `--add-kernel-support` builds"
    }

    fn check(&self, image: &Image) -> Verdict {
        if let Err(skip) = and_kernel(mofed_or_skip(image), image) {
            return skip;
        }
        let owners = match rpmdb::owners(image.snapshot) {
            None => return Verdict::Skip("no rpm database: dpkg's image".into()),
            Some(Err(e)) => return Verdict::Fail(format!("the rpm database cannot be read: {e}")),
            Some(Ok(owners)) => owners,
        };
        let (mut unowned, mut packages, mut checked) = (Vec::new(), BTreeSet::new(), Vec::new());
        for name in MOFED_MODULES {
            let Some(module) = image.modprobe(name).1.filter(|m| m.out_of_tree()) else {
                continue; // mofed_modules names it
            };
            checked.push(*name);
            match owner(&owners, &module.path) {
                Some(package) => {
                    packages.insert(package.as_str());
                }
                None => unowned.push(module.path.clone()),
            }
        }
        if checked.is_empty() {
            return Verdict::Skip("no out-of-tree MOFED module to look up".into());
        }
        if !unowned.is_empty() {
            return Verdict::Fail(format!(
                "no package owns {}: installed outside rpm, so rpm -V, dnf and a MOFED upgrade know nothing of them; install MOFED with mlnxofedinstall --add-kernel-support, which builds kmod packages for the pinned kernel",
                unowned.join(", ")
            ));
        }
        Verdict::Pass(format!(
            "{} belong to {}",
            checked.join(", "),
            packages.into_iter().collect::<Vec<_>>().join(", ")
        ))
    }
}
