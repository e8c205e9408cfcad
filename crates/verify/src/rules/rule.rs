//! What every rule shares: the [`Rule`] trait, its [`Verdict`], and the skips and lookups
//! several rules make (the kernel, MOFED, the NVIDIA driver).

use crate::image::Image;

/// What a rule concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It looked, and the image is right; what it saw.
    Pass(String),
    /// It looked, and the image is wrong; what is wrong and what to do.
    Fail(String),
    /// It did not look; why.
    Skip(String),
}

/// One check of a compute-node image.
pub trait Rule: Sync {
    /// The stable id reports and tests use.
    fn id(&self) -> &'static str;
    /// What it checks, in one line (docs/verify.md's rule list).
    fn summary(&self) -> &'static str;
    /// Its verdict on `image`.
    fn check(&self, image: &Image) -> Verdict;
}

/// The kernel the checks need, or the skip that says why there is none.
pub(crate) fn kernel_or_skip<'a>(image: &'a Image) -> Result<&'a str, Verdict> {
    image.kernel_name().ok_or_else(|| {
        Verdict::Skip(format!(
            "no kernel to check against: /boot has {:?}; name it with --kernel",
            image.boot_kernels
        ))
    })
}

/// The kernel, once `present` (a component's own check that it is in the image) holds.
pub(crate) fn and_kernel<'a>(
    present: Result<(), Verdict>,
    image: &'a Image,
) -> Result<&'a str, Verdict> {
    present.and_then(|()| kernel_or_skip(image))
}

/// The skip of a MOFED rule in an image without MOFED.
pub(crate) fn mofed_or_skip(image: &Image) -> Result<(), Verdict> {
    if image.mofed_traces.is_empty() && image.expect.mofed.is_none() && image.expect.doca.is_none()
    {
        Err(Verdict::Skip(
            "no MOFED in the image (no ofed_info, openib.conf, openibd unit, ofa_kernel or MOFED modules) and none asked for (--mofed, --doca)".into(),
        ))
    } else {
        Ok(())
    }
}

/// The skip of an NVIDIA rule in an image without the driver.
pub(crate) fn nvidia_or_skip(image: &Image) -> Result<(), Verdict> {
    if image.nvidia_traces.is_empty() && image.expect.nvidia.is_none() {
        Err(Verdict::Skip(
            "no NVIDIA driver in the image (no nvidia*.ko, no nvidia-smi) and none asked for (--nvidia)".into(),
        ))
    } else {
        Ok(())
    }
}

/// The nvidia module `modprobe` loads, or the skip that says why there is none (no driver, no
/// kernel, no module).
pub(crate) fn loaded_nvidia<'i, 'a>(
    image: &'i Image<'a>,
) -> Result<&'i crate::image::ModuleFile<'a>, Verdict> {
    and_kernel(nvidia_or_skip(image), image)?;
    let (_, file) = image.modprobe("nvidia");
    file.ok_or_else(|| Verdict::Skip("no nvidia module loads (see nvidia_modules)".into()))
}

/// Describes what `modprobe name` does, for details.
pub(crate) fn describe(resolution: &crate::modprobe::Resolution) -> String {
    use crate::modprobe::Resolution;
    match resolution {
        Resolution::File { file, via } if via.len() > 1 => {
            format!("{file} (through the alias {})", via.join(" → "))
        }
        Resolution::File { file, .. } => file.clone(),
        Resolution::Builtin => "built into the kernel".into(),
        Resolution::Install(command) => format!("an install command ({command})"),
        Resolution::Missing => "nothing".into(),
    }
}
