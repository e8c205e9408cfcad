//! `nvidia_kernel_flavor`: the NVIDIA module that loads is of the flavour the recipe asked
//! for (`nvidia_kernel_flavor`): the open modules (`Dual MIT/GPL`) or the proprietary ones
//! (licence `NVIDIA`). A GPU that needs the open modules does not run with the others.

use super::rule::{loaded_nvidia, Rule, Verdict};
use crate::image::Image;
use spec::NvidiaFlavor;

/// The rule.
pub struct NvidiaKernelFlavor;

impl Rule for NvidiaKernelFlavor {
    fn id(&self) -> &'static str {
        "nvidia_kernel_flavor"
    }

    fn summary(&self) -> &'static str {
        "with the NVIDIA driver in the image: the flavour of the nvidia module `modprobe` loads, read from its `.modinfo` licence (`NVIDIA`: proprietary, `Dual MIT/GPL`: open), is the `nvidia_kernel_flavor` the recipe asked for"
    }

    fn check(&self, image: &Image) -> Verdict {
        let module = match loaded_nvidia(image) {
            Ok(module) => module,
            Err(skip) => return skip,
        };
        let license = module.info.ok().and_then(|i| i.get("license"));
        let found = license.and_then(NvidiaFlavor::of_license);
        let shown = license.unwrap_or("(none)");
        match (image.expect.nvidia_flavor, found) {
            (Some(want), Some(found)) if want == found => Verdict::Pass(format!(
                "{} is the {found} flavour (licence {shown})",
                module.path
            )),
            (Some(want), Some(found)) => Verdict::Fail(format!(
                "{} is the {found} flavour (licence {shown}), not the {want} one the recipe's nvidia_kernel_flavor asks for: install the driver's {want} kernel modules, or set nvidia_kernel_flavor: {found}",
                module.path
            )),
            (Some(want), None) => Verdict::Fail(format!(
                "{} has licence {shown}, which is neither NVIDIA's proprietary (NVIDIA) nor its open (Dual MIT/GPL) modules' licence; the recipe asks for {want}",
                module.path
            )),
            (None, found) => Verdict::Pass(format!(
                "{} is the {} flavour (licence {shown}; no flavour asked for)",
                module.path,
                found.map_or("unknown", NvidiaFlavor::as_str)
            )),
        }
    }
}
