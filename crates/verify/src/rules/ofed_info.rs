//! `ofed_info`: MOFED's `ofed_info` is there and reports the pinned version.

use super::rule::{mofed_or_skip, Rule, Verdict};
use crate::image::Image;

/// The rule.
pub struct OfedInfo;

impl Rule for OfedInfo {
    fn id(&self) -> &'static str {
        "ofed_info"
    }

    fn summary(&self) -> &'static str {
        "with MOFED in the image: `/usr/bin/ofed_info` is there and, when a version is pinned (`--mofed`, the label), reports `MLNX_OFED_LINUX-<version>`"
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
            .find(|w| w.starts_with("MLNX_OFED_LINUX-"))
            .map(str::to_owned);
        match (&image.expect.mofed, found) {
            (Some(version), Some(found)) if found == format!("MLNX_OFED_LINUX-{version}") => {
                Verdict::Pass(format!("ofed_info -s reports {found}"))
            }
            (Some(version), found) => Verdict::Fail(format!(
                "ofed_info reports {}, not MLNX_OFED_LINUX-{version}: the image has another MOFED than the recipe's mofed_version",
                found.as_deref().unwrap_or("no version")
            )),
            (None, Some(found)) => Verdict::Pass(format!(
                "ofed_info -s reports {found} (no version pinned to compare)"
            )),
            (None, None) => Verdict::Fail("ofed_info reports no MLNX_OFED_LINUX version".into()),
        }
    }
}
