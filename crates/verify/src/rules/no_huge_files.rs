//! `no_huge_files`: nothing newc cpio cannot hold.

use super::rule::{Rule, Verdict};
use crate::image::Image;
use crate::snapshot::Kind;

/// The rule.
pub struct NoHugeFiles;

const FOUR_GIB: u64 = 4 << 30;

impl Rule for NoHugeFiles {
    fn id(&self) -> &'static str {
        "no_huge_files"
    }

    fn summary(&self) -> &'static str {
        "no file of 4 GiB or more, which `cpio -H newc` (Warewulf's image format) cannot hold"
    }

    fn check(&self, image: &Image) -> Verdict {
        let mut files = 0;
        let mut huge = Vec::new();
        for (path, entry) in image.snapshot.entries() {
            if entry.kind == Kind::File {
                files += 1;
                if entry.size >= FOUR_GIB {
                    huge.push(path.clone());
                }
            }
        }
        if huge.is_empty() {
            Verdict::Pass(format!("no file of 4 GiB or more ({files} files)"))
        } else {
            Verdict::Fail(format!(
                "{huge:?} reach 4 GiB, which cpio -H newc (Warewulf's image format) cannot hold"
            ))
        }
    }
}
