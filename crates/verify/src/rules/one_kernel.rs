//! `one_kernel`: exactly the pinned kernel in `/boot` and `/lib/modules`, no other.

use super::{Rule, Verdict};
use crate::image::{Image, KernelSource};

/// The rule.
pub struct OneKernel;

impl Rule for OneKernel {
    fn id(&self) -> &'static str {
        "one_kernel"
    }

    fn summary(&self) -> &'static str {
        "exactly one kernel: `/boot/vmlinuz-K` and `/lib/modules/K` of the pinned (or only) kernel, no module folder of another (often the build host's `uname -r`), no debug kernel"
    }

    fn check(&self, image: &Image) -> Verdict {
        let Some((k, source)) = &image.kernel else {
            return Verdict::Fail(format!(
                "expected exactly one /boot/vmlinuz-*, found {:?}; install exactly the pinned kernel, or name it with --kernel",
                image.boot_kernels
            ));
        };
        let mut problems = Vec::new();
        if image.boot_kernels != vec![k.clone()] {
            problems.push(format!(
                "/boot has vmlinuz for {:?}, expected only {k}",
                image.boot_kernels
            ));
        }
        if k.contains("+debug") {
            problems.push(format!(
                "{k} is a debug kernel, which Warewulf does not pick"
            ));
        }
        let others: Vec<&String> = image.module_dirs.iter().filter(|d| *d != k).collect();
        if !others.is_empty() {
            problems.push(format!(
                "/lib/modules has {others:?} besides {k}: modules built for another kernel (often the build host's `uname -r`); build them with the pinned kernel's name and remove those folders"
            ));
        }
        if !image.module_dirs.contains(k) {
            problems.push(format!("/lib/modules/{k} is missing"));
        }
        if !problems.is_empty() {
            return Verdict::Fail(problems.join("; "));
        }
        let how = match source {
            KernelSource::Named => "",
            KernelSource::OnlyOne => " (nothing named a kernel: the image's only one is used)",
        };
        Verdict::Pass(format!(
            "/boot/vmlinuz-{k} and /lib/modules/{k}, nothing else{how}"
        ))
    }
}
