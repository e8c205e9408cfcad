//! `vermagic`: every module of the kernel's folder is built for that kernel.

use super::rule::{kernel_or_skip, Rule, Verdict};
use crate::image::Image;

/// The rule.
pub struct Vermagic;

impl Rule for Vermagic {
    fn id(&self) -> &'static str {
        "vermagic"
    }

    fn summary(&self) -> &'static str {
        "every module under `/lib/modules/K` has the vermagic of K (a module built for the build host's kernel is named)"
    }

    fn check(&self, image: &Image) -> Verdict {
        let k = match kernel_or_skip(image) {
            Ok(k) => k,
            Err(skip) => return skip,
        };
        let mut count = 0;
        let mut wrong = Vec::new();
        for module in image.kernel_modules() {
            count += 1;
            match module.info {
                Ok(info) if info.kernel() == Some(k) => {}
                Ok(info) => wrong.push(format!(
                    "{} is built for {}",
                    module.path,
                    info.kernel().unwrap_or("no kernel (no vermagic)")
                )),
                Err(e) => wrong.push(format!("{}: {e}", module.path)),
            }
        }
        if wrong.is_empty() {
            return Verdict::Pass(format!("all {count} modules are built for {k}"));
        }
        let shown: Vec<&String> = wrong.iter().take(10).collect();
        Verdict::Fail(format!(
            "{} modules are not built for {k}: {shown:?}; rebuild them for the pinned kernel (--kernel / --kernel-name {k})",
            wrong.len()
        ))
    }
}
