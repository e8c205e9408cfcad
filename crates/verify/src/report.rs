//! verify's report: every rule's verdict on one image (checks that ran, and checks skipped with
//! why), the kernel they were made against, and every kernel module found.

use serde::{Deserialize, Serialize};

use crate::image::{Expect, Image, KernelSource};
use crate::rules::{Verdict, RULES};
use crate::snapshot::Snapshot;

/// A check that ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// The rule's id.
    pub id: String,
    /// Passed.
    pub ok: bool,
    /// What was found, and what to do when it failed.
    pub detail: String,
}

/// A check that did not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// The rule's id.
    pub id: String,
    /// Why it did not run.
    pub reason: String,
}

/// A kernel module of the image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleRecord {
    /// Its path in the image.
    pub path: String,
    /// Its vermagic (empty when unreadable).
    pub vermagic: String,
    /// The modules it depends on.
    pub depends: Vec<String>,
    /// Built outside the kernel's own tree (no `intree=Y` in its `.modinfo`).
    #[serde(default)]
    pub out_of_tree: bool,
}

/// All checks of an image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The image (or folder) checked.
    pub image: String,
    /// The kernel the checks were made against.
    pub kernel: Option<String>,
    /// How that kernel was chosen.
    #[serde(default)]
    pub kernel_source: Option<KernelSource>,
    /// Every check that ran passed.
    pub ok: bool,
    /// The checks that ran.
    pub checks: Vec<Check>,
    /// The checks that did not run, and why.
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// Every kernel module found.
    pub modules: Vec<ModuleRecord>,
}

/// Applies every rule to `snapshot`, the image called `image`.
pub fn verify(snapshot: &Snapshot, image: &str, expect: &Expect) -> Report {
    let view = Image::new(snapshot, expect);
    let mut checks = Vec::new();
    let mut skipped = Vec::new();
    for rule in RULES {
        let id = rule.id().to_owned();
        match rule.check(&view) {
            Verdict::Pass(detail) => checks.push(Check {
                id,
                ok: true,
                detail,
            }),
            Verdict::Fail(detail) => checks.push(Check {
                id,
                ok: false,
                detail,
            }),
            Verdict::Skip(reason) => skipped.push(Skipped { id, reason }),
        }
    }
    let modules = view
        .modules
        .iter()
        .map(|m| ModuleRecord {
            path: m.path.clone(),
            vermagic: m
                .info
                .ok()
                .and_then(|i| i.get("vermagic"))
                .unwrap_or_default()
                .trim()
                .to_owned(),
            depends: m
                .info
                .map(|i| i.depends().into_iter().map(str::to_owned).collect())
                .unwrap_or_default(),
            out_of_tree: m.out_of_tree(),
        })
        .collect();
    Report {
        image: image.to_owned(),
        kernel: view.kernel.as_ref().map(|(k, _)| k.clone()),
        kernel_source: view.kernel.as_ref().map(|(_, s)| *s),
        ok: checks.iter().all(|c| c.ok),
        checks,
        skipped,
        modules,
    }
}
