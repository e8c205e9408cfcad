//! `modules_dep`: `modules.dep` lists every module name of the kernel's folder.

use std::collections::BTreeMap;

use super::rule::{kernel_or_skip, Rule, Verdict};
use crate::image::Image;

/// The rule.
pub struct ModulesDep;

impl Rule for ModulesDep {
    fn id(&self) -> &'static str {
        "modules_dep"
    }

    fn summary(&self) -> &'static str {
        "`modules.dep` lists every module of the kernel (depmod ran after the last one was installed); inbox copies that out-of-tree modules replace are counted"
    }

    fn check(&self, image: &Image) -> Verdict {
        let k = match kernel_or_skip(image) {
            Ok(k) => k,
            Err(skip) => return skip,
        };
        if !image.resolver.has_modules_dep() {
            return Verdict::Fail(format!(
                "/lib/modules/{k}/modules.dep is missing or empty; run depmod {k} after the last module is installed"
            ));
        }
        // depmod lists one file per module name (the one modprobe loads).
        let mut files_by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for module in image.kernel_modules() {
            files_by_name
                .entry(crate::modprobe::name_of_file(&module.rel))
                .or_default()
                .push(module.rel.clone());
        }
        let missing: Vec<&String> = files_by_name
            .iter()
            .filter(|(name, _)| image.resolver.dep_file(name).is_none())
            .flat_map(|(_, files)| files)
            .collect();
        if !missing.is_empty() {
            return Verdict::Fail(format!(
                "modules.dep does not list {missing:?}: depmod {k} did not run after they were installed"
            ));
        }
        let files: usize = files_by_name.values().map(Vec::len).sum();
        let shadowed: Vec<&String> = files_by_name
            .iter()
            .filter(|(_, files)| files.len() > 1)
            .map(|(name, _)| name)
            .collect();
        let extra = if shadowed.is_empty() {
            String::new()
        } else {
            format!(
                "; {} more files are copies it shadows (the inbox {}, replaced by out-of-tree builds)",
                files - files_by_name.len(),
                shadowed.iter().take(8).map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            )
        };
        Verdict::Pass(format!(
            "modules.dep lists all {} module names{extra}",
            files_by_name.len()
        ))
    }
}
