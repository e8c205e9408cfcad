//! `bin_sh`: the shell Warewulf's init needs.

use super::rule::{Rule, Verdict};
use crate::image::Image;

/// The rule.
pub struct BinSh;

impl Rule for BinSh {
    fn id(&self) -> &'static str {
        "bin_sh"
    }

    fn summary(&self) -> &'static str {
        "`/bin/sh` is a file (symlinks followed inside the image): Warewulf's init needs a shell"
    }

    fn check(&self, image: &Image) -> Verdict {
        if image.snapshot.is_file("/bin/sh") {
            Verdict::Pass("/bin/sh present".into())
        } else {
            Verdict::Fail("/bin/sh is missing: Warewulf's init needs a shell".into())
        }
    }
}
