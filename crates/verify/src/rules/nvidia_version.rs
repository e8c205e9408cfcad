//! `nvidia_version`: the NVIDIA module that loads carries the pinned driver version.

use super::rule::{loaded_nvidia, Rule, Verdict};
use crate::image::Image;

/// The rule.
pub struct NvidiaVersion;

impl Rule for NvidiaVersion {
    fn id(&self) -> &'static str {
        "nvidia_version"
    }

    fn summary(&self) -> &'static str {
        "with the NVIDIA driver in the image: the `version` in the `.modinfo` of the nvidia module `modprobe` loads is reported, and must equal the pinned `nvidia_version` when one is given"
    }

    fn check(&self, image: &Image) -> Verdict {
        let module = match loaded_nvidia(image) {
            Ok(module) => module,
            Err(skip) => return skip,
        };
        let found = module.info.ok().and_then(|i| i.get("version"));
        match (&image.expect.nvidia, found) {
            (Some(want), Some(found)) if want == found => {
                Verdict::Pass(format!("{} is driver {found}", module.path))
            }
            (Some(want), found) => Verdict::Fail(format!(
                "{} is driver {}, not the pinned {want}: the image has another NVIDIA driver than the recipe's nvidia_version",
                module.path,
                found.unwrap_or("(no version in .modinfo)")
            )),
            (None, Some(found)) => Verdict::Pass(format!(
                "{} is driver {found} (no version pinned to compare)",
                module.path
            )),
            (None, None) => Verdict::Fail(format!("{} has no version in .modinfo", module.path)),
        }
    }
}
