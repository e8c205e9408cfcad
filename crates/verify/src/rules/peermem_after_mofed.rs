//! `peermem_after_mofed`: the nvidia-peermem that loads was built against MOFED's RDMA API.

use super::rule::{and_kernel, describe, nvidia_or_skip, Rule, Verdict};
use crate::image::Image;

/// The rule.
pub struct PeermemAfterMofed;

impl Rule for PeermemAfterMofed {
    fn id(&self) -> &'static str {
        "peermem_after_mofed"
    }

    fn summary(&self) -> &'static str {
        "with the NVIDIA driver in the image: the nvidia-peermem `modprobe` loads depends on ib_core, so it was built against MOFED's peer-memory API (a stub without it means no GPUDirect RDMA)"
    }

    fn check(&self, image: &Image) -> Verdict {
        if let Err(skip) = and_kernel(nvidia_or_skip(image), image) {
            return skip;
        }
        let (resolution, file) = image.modprobe("nvidia-peermem");
        let Some(module) = file else {
            return Verdict::Fail(format!(
                "modprobe nvidia-peermem loads {}: nvidia-peermem is missing",
                describe(&resolution)
            ));
        };
        let depends: Vec<&str> = module.info.map(|i| i.depends()).unwrap_or_default();
        if depends.contains(&"ib_core") {
            Verdict::Pass(format!(
                "{} depends on ib_core: built against MOFED's RDMA API",
                module.path
            ))
        } else {
            Verdict::Fail(format!(
                "{} (what modprobe nvidia-peermem loads) depends on {depends:?}, not ib_core: it was built without MOFED's peer-memory API (GPUDirect RDMA will not work); install MOFED before the NVIDIA driver",
                module.path
            ))
        }
    }
}
