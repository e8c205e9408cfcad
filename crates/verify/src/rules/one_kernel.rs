//! `one_kernel`: exactly the pinned kernel in `/boot` and `/lib/modules`, no other.

use super::rule::{Rule, Verdict};
use crate::image::{Image, KernelSource};

/// The rule.
pub struct OneKernel;

impl Rule for OneKernel {
    fn id(&self) -> &'static str {
        "one_kernel"
    }

    fn summary(&self) -> &'static str {
        "exactly one kernel: `/boot/vmlinuz-K` and `/lib/modules/K` of the pinned (or only) kernel, no module folder or DKMS build (`/var/lib/dkms/*/*/<kernel>`) of another (often the build host's `uname -r`), no debug kernel"
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
        let dkms_builds = dkms_builds_for_other_kernels(image, k);
        if !dkms_builds.is_empty() {
            problems.push(format!(
                "DKMS built {dkms_builds:?} for another kernel than {k} (DKMS builds for `uname -r`: in a container build that is the build host's kernel); build for the pinned kernel and remove them"
            ));
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

/// DKMS's build folders (`/var/lib/dkms/<module>/<version>/<kernel>`) for other kernels.
fn dkms_builds_for_other_kernels(image: &Image, kernel: &str) -> Vec<String> {
    let dkms = "/var/lib/dkms";
    let mut found = Vec::new();
    for module in image.snapshot.list(dkms) {
        let module_dir = format!("{dkms}/{module}");
        for version in image.snapshot.list(&module_dir) {
            let version_dir = format!("{module_dir}/{version}");
            let is_dir = |p: &str| {
                image
                    .snapshot
                    .entry(p)
                    .is_some_and(|e| e.kind == crate::snapshot::Kind::Dir)
            };
            if !is_dir(&version_dir) {
                continue;
            }
            for built in image.snapshot.list(&version_dir) {
                let looks_like_a_kernel = built.starts_with(|c: char| c.is_ascii_digit());
                if looks_like_a_kernel && built != kernel {
                    found.push(format!("{version_dir}/{built}"));
                }
            }
        }
    }
    found
}
