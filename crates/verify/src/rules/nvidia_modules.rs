//! `nvidia_modules`: `modprobe` finds each NVIDIA module, under whatever name the packaging
//! gives it (the `.run` installer's `nvidia.ko`, Debian's `nvidia-current.ko` behind an alias).

use super::rule::{and_kernel, describe, nvidia_or_skip, Rule, Verdict};
use crate::image::Image;
use crate::modprobe::Resolution;

/// The rule.
pub struct NvidiaModules;

/// The NVIDIA modules a GPU node loads.
pub const NVIDIA_MODULES: &[&str] = &["nvidia", "nvidia-uvm", "nvidia-modeset", "nvidia-peermem"];

impl Rule for NvidiaModules {
    fn id(&self) -> &'static str {
        "nvidia_modules"
    }

    fn summary(&self) -> &'static str {
        "with the NVIDIA driver in the image: `modprobe` of nvidia, nvidia-uvm, nvidia-modeset and nvidia-peermem each loads a module file (modprobe.d aliases followed, so Debian's `nvidia-current*` names count)"
    }

    fn check(&self, image: &Image) -> Verdict {
        if let Err(skip) = and_kernel(nvidia_or_skip(image), image) {
            return skip;
        }
        let mut found = Vec::new();
        let mut missing = Vec::new();
        for name in NVIDIA_MODULES {
            let (resolution, file) = image.modprobe(name);
            match (&resolution, file) {
                (Resolution::File { .. }, Some(_)) => {
                    found.push(format!("{name}: {}", describe(&resolution)))
                }
                _ => missing.push(format!("modprobe {name} loads {}", describe(&resolution))),
            }
        }
        if missing.is_empty() {
            Verdict::Pass(found.join("; "))
        } else {
            Verdict::Fail(format!(
                "{}; install the NVIDIA driver for the pinned kernel (--kernel-name), then depmod",
                missing.join("; ")
            ))
        }
    }
}
