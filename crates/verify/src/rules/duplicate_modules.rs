//! `duplicate_modules`: no two out-of-tree files carry a module of the same name.

use std::collections::BTreeMap;

use super::rule::{kernel_or_skip, Rule, Verdict};
use crate::image::Image;

/// The rule.
pub struct DuplicateModules;

impl Rule for DuplicateModules {
    fn id(&self) -> &'static str {
        "duplicate_modules"
    }

    fn summary(&self) -> &'static str {
        "no two out-of-tree files carry a module of the same `.modinfo` name (two builds of one driver: only one loads, and which is easy to get wrong)"
    }

    fn check(&self, image: &Image) -> Verdict {
        if let Err(skip) = kernel_or_skip(image) {
            return skip;
        }
        let mut by_name: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for module in image.kernel_modules().filter(|m| m.out_of_tree()) {
            by_name.entry(module.name()).or_default().push(&module.rel);
        }
        let twice: Vec<String> = by_name
            .iter()
            .filter(|(_, files)| files.len() > 1)
            .map(|(name, files)| {
                let loaded = image.resolver.dep_file(name).unwrap_or("none of them");
                format!("{name} in {files:?} (modprobe loads {loaded})")
            })
            .collect();
        if twice.is_empty() {
            Verdict::Pass(format!(
                "{} out-of-tree modules, each in one file",
                by_name.len()
            ))
        } else {
            Verdict::Fail(format!(
                "{}; remove the copies that should not be there (a driver installed twice, by two methods), then depmod",
                twice.join("; ")
            ))
        }
    }
}
