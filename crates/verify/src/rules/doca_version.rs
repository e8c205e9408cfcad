//! `doca_version`: the DOCA-OFED the image holds is of the DOCA version asked for, by the
//! `doca-ofed` package in the image's dpkg database (DOCA-OFED's `ofed_info` names its OFED
//! version, not the DOCA one).

use super::rule::{Rule, Verdict};
use crate::image::Image;

const DPKG_STATUS: &str = "/var/lib/dpkg/status";

/// The rule.
pub struct DocaVersion;

/// The version of `package` an installed dpkg database stanza gives, if any.
pub(crate) fn dpkg_version(status: &str, package: &str) -> Option<String> {
    status.split("\n\n").find_map(|stanza| {
        let field = |name: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .map(str::trim)
        };
        (field("Package") == Some(package)
            && field("Status").is_some_and(|s| s.ends_with(" installed")))
        .then(|| field("Version").map(str::to_owned))
        .flatten()
    })
}

impl Rule for DocaVersion {
    fn id(&self) -> &'static str {
        "doca_version"
    }

    fn summary(&self) -> &'static str {
        "with DOCA-OFED asked for (`--doca`, the label) or installed: the dpkg database's `doca-ofed` is of that DOCA version"
    }

    fn check(&self, image: &Image) -> Verdict {
        let status = image.snapshot.read_text(DPKG_STATUS);
        let installed = status.as_deref().and_then(|s| dpkg_version(s, "doca-ofed"));
        match (&image.expect.doca, installed, status) {
            (None, None, _) => Verdict::Skip(
                "no DOCA-OFED in the image (no doca-ofed package) and none asked for (--doca)"
                    .into(),
            ),
            (None, Some(found), _) => Verdict::Pass(format!(
                "doca-ofed {found} is installed (no DOCA version pinned to compare)"
            )),
            (Some(_), None, None) => Verdict::Skip(format!(
                "no {DPKG_STATUS}: the DOCA version is read from dpkg's database (Debian, Ubuntu)"
            )),
            (Some(doca), None, Some(_)) => Verdict::Fail(format!(
                "the recipe asks for DOCA {doca}, but no doca-ofed package is installed; install doca-ofed from the DOCA {doca} repository"
            )),
            (Some(doca), Some(found), _)
                if found == *doca || found.starts_with(&format!("{doca}-")) =>
            {
                Verdict::Pass(format!("doca-ofed {found} is DOCA {doca}'s"))
            }
            (Some(doca), Some(found), _) => Verdict::Fail(format!(
                "doca-ofed {found} is installed, not DOCA {doca}'s: the image has another DOCA than the recipe's doca_version"
            )),
        }
    }
}
