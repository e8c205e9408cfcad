//! `initramfs`: the pinned kernel's initramfs is in `/boot` when the image builds one.

use super::rule::{kernel_or_skip, Rule, Verdict};
use crate::image::Image;

/// The rule.
pub struct Initramfs;

impl Rule for Initramfs {
    fn id(&self) -> &'static str {
        "initramfs"
    }

    fn summary(&self) -> &'static str {
        "an initramfs for the kernel is in `/boot` (`initrd.img-K` or `initramfs-K.img`) when the recipe builds one (`--initramfs`, the label); one found is reported"
    }

    fn check(&self, image: &Image) -> Verdict {
        let k = match kernel_or_skip(image) {
            Ok(k) => k,
            Err(skip) => return skip,
        };
        let candidates = [
            format!("/boot/initrd.img-{k}"),
            format!("/boot/initramfs-{k}.img"),
        ];
        let found = candidates.iter().find(|c| image.snapshot.is_file(c));
        match (found, image.expect.initramfs) {
            (Some(f), _) => Verdict::Pass(f.clone()),
            (None, true) => Verdict::Fail(format!(
                "no initramfs for {k} in /boot; build it last with dracut -f -N --kver {k}"
            )),
            (None, false) => Verdict::Skip(
                "no initramfs in /boot, and none asked for (--initramfs, or the image's io.imgbuild.initramfs label)".into(),
            ),
        }
    }
}
