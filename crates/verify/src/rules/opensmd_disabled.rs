//! `opensmd_disabled`: no subnet manager starts on a compute node.

use super::rule::{Rule, Verdict};
use crate::image::Image;

/// The rule.
pub struct OpensmdDisabled;

impl Rule for OpensmdDisabled {
    fn id(&self) -> &'static str {
        "opensmd_disabled"
    }

    fn summary(&self) -> &'static str {
        "`opensmd.service` (or `opensm.service`) is not enabled, whatever was asked: a subnet manager on every compute node destabilises the fabric (`--allow-opensm` for a subnet-manager image)"
    }

    fn check(&self, image: &Image) -> Verdict {
        let enabled = image.enabled_units();
        let managers: Vec<&str> = ["opensmd.service", "opensm.service"]
            .into_iter()
            .filter(|u| enabled.contains(*u))
            .collect();
        match (managers.is_empty(), image.expect.allow_opensm) {
            (true, _) => Verdict::Pass("no subnet manager is enabled".into()),
            (false, true) => Verdict::Pass(format!(
                "{} enabled, allowed by --allow-opensm (a subnet-manager image)",
                managers.join(", ")
            )),
            (false, false) => Verdict::Fail(format!(
                "{} enabled: a subnet manager on a compute node destabilises the fabric; disable it (systemd: enabled: false), or pass --allow-opensm for a subnet-manager image",
                managers.join(", ")
            )),
        }
    }
}
