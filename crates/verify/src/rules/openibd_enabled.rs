//! `openibd_enabled`: MOFED's `openibd` starts at boot.

use super::rule::{mofed_or_skip, Rule, Verdict};
use crate::image::Image;

/// The rule.
pub struct OpenibdEnabled;

impl Rule for OpenibdEnabled {
    fn id(&self) -> &'static str {
        "openibd_enabled"
    }

    fn summary(&self) -> &'static str {
        "with MOFED in the image: `openibd.service` is enabled (a `.wants` link), so the InfiniBand stack loads at boot"
    }

    fn check(&self, image: &Image) -> Verdict {
        if let Err(skip) = mofed_or_skip(image) {
            return skip;
        }
        if image.enabled_units().contains("openibd.service") {
            Verdict::Pass("openibd.service is enabled".into())
        } else {
            Verdict::Fail(
                "openibd.service is not enabled: enable it (systemd: enabled: true) so the InfiniBand stack loads at boot".into(),
            )
        }
    }
}
