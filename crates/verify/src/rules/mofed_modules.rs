//! `mofed_modules`: the InfiniBand modules `modprobe` loads are MOFED's, not the inbox ones.

use super::rule::{and_kernel, describe, mofed_or_skip, Rule, Verdict};
use crate::image::{Image, MOFED_MODULES};
use crate::modprobe::Resolution;

/// The rule.
pub struct MofedModules;

impl Rule for MofedModules {
    fn id(&self) -> &'static str {
        "mofed_modules"
    }

    fn summary(&self) -> &'static str {
        "with MOFED in the image: `modprobe` of mlx5_core, mlx5_ib, ib_core, ib_uverbs, rdma_cm and ib_ipoib loads MOFED's out-of-tree copy, not the kernel's inbox one"
    }

    fn check(&self, image: &Image) -> Verdict {
        if let Err(skip) = and_kernel(mofed_or_skip(image), image) {
            return skip;
        }
        let mut problems = Vec::new();
        for name in MOFED_MODULES {
            let (resolution, file) = image.modprobe(name);
            match (&resolution, file) {
                (Resolution::File { .. }, Some(module)) if module.out_of_tree() => {}
                (Resolution::File { .. }, Some(_)) => {
                    problems.push(format!("{name} loads the inbox {}", describe(&resolution)))
                }
                _ => problems.push(format!("modprobe {name} loads {}", describe(&resolution))),
            }
        }
        if problems.is_empty() {
            Verdict::Pass(format!(
                "{} load MOFED's out-of-tree copies",
                MOFED_MODULES.join(", ")
            ))
        } else {
            Verdict::Fail(format!(
                "{}; install MOFED with --add-kernel-support for the pinned kernel, then depmod",
                problems.join("; ")
            ))
        }
    }
}
