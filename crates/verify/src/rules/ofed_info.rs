//! `ofed_info`: the InfiniBand stack's `ofed_info` is there and reports the stack asked for:
//! MLNX_OFED's `MLNX_OFED_LINUX-<version>`, or DOCA-OFED's `OFED-internal-<version>`.

use super::rule::{mofed_or_skip, Rule, Verdict};
use crate::image::Image;

/// What MLNX_OFED's `ofed_info -s` starts with.
const MLNX_OFED: &str = "MLNX_OFED_LINUX-";
/// What DOCA-OFED's `ofed_info -s` starts with (its OFED version, not the DOCA one).
const DOCA_OFED: &str = "OFED-internal-";

/// The rule.
pub struct OfedInfo;

impl Rule for OfedInfo {
    fn id(&self) -> &'static str {
        "ofed_info"
    }

    fn summary(&self) -> &'static str {
        "with MOFED or DOCA-OFED in the image: `/usr/bin/ofed_info` is there and reports `MLNX_OFED_LINUX-<version>` for the pinned MOFED (`--mofed`, the label), DOCA-OFED's `OFED-internal-<version>` when DOCA is asked for (`--doca`, the label)"
    }

    fn check(&self, image: &Image) -> Verdict {
        if let Err(skip) = mofed_or_skip(image) {
            return skip;
        }
        let Some(text) = image.snapshot.read_text("/usr/bin/ofed_info") else {
            return Verdict::Fail(
                "/usr/bin/ofed_info is missing although MOFED's traces are there: MOFED is installed only in part".into(),
            );
        };
        let found = text
            .split(|c: char| c.is_whitespace() || c == ':' || c == '"' || c == '\'')
            .find(|w| w.starts_with(MLNX_OFED) || w.starts_with(DOCA_OFED))
            .map(str::to_owned);
        let expect = &image.expect;
        match (&expect.doca, &expect.mofed, found) {
            (Some(doca), _, Some(found)) if found.starts_with(DOCA_OFED) => Verdict::Pass(format!(
                "ofed_info -s reports {found}, DOCA-OFED's (the recipe's DOCA {doca})"
            )),
            (Some(doca), _, found) => Verdict::Fail(format!(
                "ofed_info reports {}, not DOCA-OFED's {DOCA_OFED}<version>: the image has another InfiniBand stack than the recipe's doca_version {doca}",
                found.as_deref().unwrap_or("no version")
            )),
            (None, Some(version), Some(found)) if found == format!("{MLNX_OFED}{version}") => {
                Verdict::Pass(format!("ofed_info -s reports {found}"))
            }
            (None, Some(version), found) => Verdict::Fail(format!(
                "ofed_info reports {}, not {MLNX_OFED}{version}: the image has another MOFED than the recipe's mofed_version",
                found.as_deref().unwrap_or("no version")
            )),
            (None, None, Some(found)) => Verdict::Pass(format!(
                "ofed_info -s reports {found} (no version pinned to compare)"
            )),
            (None, None, None) => Verdict::Fail(format!(
                "ofed_info reports no {MLNX_OFED} or {DOCA_OFED} version"
            )),
        }
    }
}
